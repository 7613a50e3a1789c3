"""Tensor element types (plexus/types.h plx_dtype) and their numpy twins.

PopXL spells them popxl.float32, popxl.int32, popxl.uint8 (also popxl.dtypes.float32); so
does this module, re-exported as plexus.float32 ... and plexus.dtypes.
"""
import numpy as np

from plexus.errors import DTypeMismatch, InvalidArgument


class DType:
    """One element type: `name`, `code` (PLX_DTYPE_*), `numpy` (np.dtype), `itemsize` (bytes).
    Immutable; compare with ==."""

    __slots__ = ("name", "code", "numpy")

    def __init__(self, name, code, numpy_dtype):
        self.name, self.code, self.numpy = name, code, np.dtype(numpy_dtype)

    def as_numpy(self):
        """The numpy dtype (PopXL's DType.as_numpy())."""
        return self.numpy

    @property
    def itemsize(self):
        """Bytes per element."""
        return self.numpy.itemsize

    def __repr__(self):
        return f"plexus.{self.name}"


float32 = DType("float32", 1, np.float32)
int32 = DType("int32", 2, np.int32)
uint8 = DType("uint8", 3, np.uint8)

_BY_CODE = {d.code: d for d in (float32, int32, uint8)}
_BY_NUMPY = {d.numpy: d for d in (float32, int32, uint8)}
# PopXL's `downcast=True`: 64-bit host data becomes the 32-bit device type.
_DOWNCAST = {np.dtype(np.float64): float32, np.dtype(np.int64): int32, np.dtype(np.bool_): uint8}


def from_code(code):
    """The DType of a PLX_DTYPE_* code."""
    return _BY_CODE[code]


def of(value):
    """The DType named by `value`: a DType, a numpy dtype or type, or a name ("float32")."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in globals() and isinstance(globals()[value], DType):
        return globals()[value]
    try:
        dt = np.dtype(value)
    except TypeError:
        raise DTypeMismatch(f"not a Plexus dtype: {value!r} (float32, int32 or uint8)") from None
    if dt in _BY_NUMPY:
        return _BY_NUMPY[dt]
    raise DTypeMismatch(f"not a Plexus dtype: {dt} (float32, int32 or uint8)")


def host_array(data, dtype=None):
    """`data` as a C-contiguous numpy array of a Plexus dtype: of `dtype` when given, else
    of the data's own type with float64 -> float32, int64 -> int32 and bool -> uint8
    (PopXL's downcast). Returns (array, DType). None is refused (numpy would make it NaN)."""
    if data is None:
        raise InvalidArgument("data is None, not an array")
    array = np.asarray(data)
    if dtype is None:
        dtype = _DOWNCAST.get(array.dtype) or of(array.dtype)
    else:
        dtype = of(dtype)
    # np.asarray(order="C"), not np.ascontiguousarray: that one turns a scalar into shape [1].
    return np.asarray(array, dtype=dtype.numpy, order="C"), dtype
