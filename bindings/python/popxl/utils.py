"""popxl.utils: PopXL's host-side helpers, `to_numpy` (host data as the numpy array a tensor
is made from) and `table_to_string` (rows as an aligned text table)."""
import numpy as np

# 64-bit host types and the 32-bit types `downcast` makes of them (PopXL's rule).
_DOWNCAST = {np.dtype(np.int64): np.dtype(np.int32), np.dtype(np.uint64): np.dtype(np.uint32),
             np.dtype(np.float64): np.dtype(np.float32)}


def _check_memmap(x, dtype):
    """A memory-mapped array is returned as it is, so it must need no conversion: ValueError
    naming what would need one otherwise."""
    if dtype is not None and np.dtype(dtype.as_numpy()) != x.dtype:
        raise ValueError(f"to_numpy: a memory-mapped array of {x.dtype} cannot be given dtype {dtype.name}: it would "
                         "be copied (pass dtype=None or the array's own dtype)")
    if not (x.flags.c_contiguous and x.flags.aligned):
        raise ValueError("to_numpy: a memory-mapped array must be C-contiguous and aligned (it would be copied)")
    if x.dtype in _DOWNCAST:
        raise ValueError(f"to_numpy: a memory-mapped array of {x.dtype} would be downcast into a new array; "
                         "convert it first")


def to_numpy(x, dtype=None, downcast=True, copy=True, log2_scale=None, nan_on_overflow=None):
    """`x` as a C-ordered numpy array (PopXL popxl.utils.to_numpy): of `dtype` (a popxl dtype)
    when given, else of the data's own type, with int64 -> int32, uint64 -> uint32 and
    float64 -> float32 when `downcast`. `x`: a numpy array, a torch tensor (detached) or
    anything numpy.asarray takes (scalars, nested lists). With `copy` the result never shares
    memory with `x`; a np.memmap is returned itself (never copied), so it must need no
    conversion. Host-side only, so every popxl dtype is accepted here (float64 included);
    whether a device tensor may have it is checked when the tensor is made.

    Raises RuntimeError when log2_scale or nan_on_overflow is given (they apply to float8
    dtypes, which Plexus does not have: docs/python.md), ValueError for a memmap that would
    need converting (another dtype, not C-contiguous, or a 64-bit type to downcast), and
    numpy's errors for data it cannot convert. Thread-safe (pure)."""
    for name, value in (("log2_scale", log2_scale), ("nan_on_overflow", nan_on_overflow)):
        if value is not None:
            raise RuntimeError(f"to_numpy: {name} applies to float8 dtypes only, got {name}={value!r}")
    if isinstance(x, np.memmap):
        _check_memmap(x, dtype)
        return x
    if hasattr(x, "detach") and hasattr(x, "numpy"):  # a torch tensor, without importing torch
        x = x.detach().numpy()
    array = np.asarray(x, dtype=None if dtype is None else dtype.as_numpy(), order="C")
    if dtype is None and downcast and array.dtype in _DOWNCAST:
        return array.astype(_DOWNCAST[array.dtype], order="C")
    return array.copy() if copy and np.shares_memory(array, np.asarray(x)) else array


def table_to_string(rows, delimiter=" | ", header=True):
    """The rows (a sequence of equal-length sequences of printable items) as text, one line
    per row, each column left-aligned to its widest item and columns joined by `delimiter`;
    with `header`, a line of '-' as long as the first row's line follows it (when there are
    more rows). PopXL popxl.utils.table_to_string. Raises ValueError naming the row whose
    length differs from the first's. Pure."""
    rows = [[str(item) for item in row] for row in rows]
    for i, row in enumerate(rows):
        if len(row) != len(rows[0]):
            raise ValueError(f"table_to_string: row {i} has {len(row)} items, row 0 has {len(rows[0])}")
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))] if rows else []
    lines = []
    for i, row in enumerate(rows):
        line = delimiter.join(item.ljust(width) for item, width in zip(row, widths)) + "\n"
        lines.append(line)
        if header and i == 0 and len(rows) > 1:
            lines.append("-" * len(line) + "\n")
    return "".join(lines)


__all__ = ["to_numpy", "table_to_string"]
