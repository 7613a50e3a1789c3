"""The compiled cffi module and the helpers every wrapper uses: `check` turns a C status
into an exception, `read_text` and `read_list` run the C API's buffer protocol,
`tensor_ids` makes a plx_tensor array."""
from plexus._plexus_ffi import ffi, lib  # noqa: F401  (re-exported)
from plexus import errors


def last_error():
    """plx_last_error() of this thread, as str."""
    return ffi.string(lib.plx_last_error()).decode("utf-8", "replace")


def check(status):
    """Raises the plexus.Error subclass of `status` with plx_last_error()'s message;
    returns None for PLX_OK."""
    if status != lib.PLX_OK:
        raise errors.from_status(status, last_error())


def read_text(fn, *args):
    """Calls fn(*args, buffer, capacity, out_size) twice (size, then text) and returns the
    text: the C API's buffer protocol (plx_session_get_report and friends)."""
    size = ffi.new("size_t*")
    status = fn(*args, ffi.NULL, 0, size)
    if status not in (lib.PLX_OK, lib.PLX_ERR_BUFFER_TOO_SMALL):
        check(status)
    buffer = ffi.new("char[]", size[0])
    check(fn(*args, buffer, size[0], size))
    return ffi.string(buffer).decode("utf-8")


def read_list(fn, ctype, *args):
    """Calls fn(*args, out, capacity, out_count) twice, first with no room (to learn the
    count; PLX_ERR_BUFFER_TOO_SMALL is expected), then with a `ctype` array of that size;
    returns the array's filled part as a list."""
    count = ffi.new("size_t*")
    status = fn(*args, ffi.NULL, 0, count)
    if status != lib.PLX_ERR_BUFFER_TOO_SMALL:
        check(status)
    out = ffi.new(f"{ctype}[]", max(count[0], 1))
    check(fn(*args, out, count[0], count))
    return list(out[0:count[0]])


def tensor_ids(tensors):
    """A plx_tensor[] of the ids of `tensors` (at least one element, for cffi)."""
    return ffi.new("plx_tensor[]", [t.id for t in tensors] or [0])


def shape_array(shape):
    """(int64_t[] owned by cffi, rank) for a shape given as any sequence of ints."""
    try:
        dims = [int(d) for d in shape]
        return ffi.new("int64_t[]", dims or [0]), len(dims)
    except (TypeError, ValueError, OverflowError) as e:
        raise errors.InvalidArgument(f"shape {shape!r} is not a sequence of int64 dims ({e})") from None


def read_shape(fn, *args):
    """Calls fn(*args, out_shape, PLX_MAX_RANK, out_rank) and returns the shape as a tuple."""
    dims = ffi.new("int64_t[]", lib.PLX_MAX_RANK)
    rank = ffi.new("size_t*")
    check(fn(*args, dims, lib.PLX_MAX_RANK, rank))
    return tuple(dims[i] for i in range(rank[0]))
