"""PopXL's placement and naming scopes (PopXL popxl.context): `with popxl.ipu(n):`,
`with popxl.io_tiles():` and `with popxl.name_scope(name):`.

On Plexus, ipu and io_tiles place nothing: a Session places blocks on devices by its
`stages` (docs/python.md, "import popxl"), and Plexus devices have no separate I/O tiles.
They check their arguments and record the scope so that current_ipu() / in_io_tiles() report
it. name_scope prefixes the names of tensors created inside it, as PopXL's does."""
import contextlib
import threading

from plexus import context as _context

_local = threading.local()


def current_ipu():
    """The IPU index of the innermost open `ipu(n)` scope on this thread, 0 outside any
    (PopXL Context.ipu_id's default)."""
    return getattr(_local, "ipu", 0)


def in_io_tiles():
    """Whether an `io_tiles()` scope is open on this thread (PopXL Context.io_tile_set)."""
    return getattr(_local, "io_tiles", False)


@contextlib.contextmanager
def _set(attr, value):
    """Sets this thread's `attr` to `value` for the body of the with-block, then restores it."""
    prev = getattr(_local, attr, None)
    setattr(_local, attr, value)
    try:
        yield
    finally:
        if prev is None:
            delattr(_local, attr)
        else:
            setattr(_local, attr, prev)


@contextlib.contextmanager
def ipu(ipu):
    """Scope for ops to run on IPU `ipu` (PopXL popxl.ipu); yields `ipu`. `ipu` must be an
    int >= 0: TypeError otherwise (what PopXL's binding raises for a non-int) and
    plexus.InvalidArgument (a ValueError) for a negative index. No placement effect on
    Plexus: a Session's `stages` place blocks on devices."""
    from plexus.errors import InvalidArgument
    if isinstance(ipu, bool) or not isinstance(ipu, int):
        raise TypeError(f"ipu: the IPU index must be an int, got {type(ipu).__name__}")
    if ipu < 0:
        raise InvalidArgument(f"ipu: the IPU index must be >= 0, got {ipu}")
    with _set("ipu", ipu):
        yield ipu


@contextlib.contextmanager
def io_tiles():
    """Scope for ops to run on the IO tiles of the current IPU (PopXL popxl.io_tiles); yields
    None. No effect on Plexus, whose devices have no separate I/O tiles (Tensor.tile_set is
    "compute")."""
    with _set("io_tiles", True):
        yield


@contextlib.contextmanager
def name_scope(name):
    """Scope that prefixes the names of tensors created inside it with `name/` (PopXL
    popxl.name_scope); nested scopes join outermost first: `a/b/x`. Yields the list of open
    scope names. `name` must be a non-empty str (plexus.InvalidArgument otherwise). Applies
    to the tensors named by variable, constant, the remote and sharded variables, h2d_stream
    and graph_input, given a name or not."""
    _context.push_name_scope(name)
    try:
        yield _context.name_scopes()
    finally:
        _context.pop_name_scope()
