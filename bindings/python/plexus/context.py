"""The current graph: PopXL's `with ir.main_graph:` / `with graph:` make ops implicit in
that graph (PopXL popxl.gcg()).

A per-thread stack of Graph objects; plexus.variable, plexus.ops.* and friends add to the
top one's Ir, in the graph the C API's own scope (plx_ir_begin_graph) names. Building one
Ir from several threads at once is not supported (the C API's rule for plx_ir)."""
import threading

_local = threading.local()


def _stack():
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def push(graph):
    """Makes `graph` (a plexus.Graph) current on this thread (entering `with graph:`)."""
    _stack().append(graph)


def pop(graph):
    """Undoes push(graph); contexts must close innermost first."""
    stack = _stack()
    if not stack or stack[-1] is not graph:
        raise RuntimeError("plexus: graph contexts closed out of order")
    stack.pop()


def current_graph():
    """The Graph of the innermost `with graph:` on this thread (PopXL popxl.gcg()).
    Raises plexus.InvalidArgument when there is none."""
    stack = _stack()
    if not stack:
        from plexus.errors import InvalidArgument
        raise InvalidArgument("no current graph: build ops inside `with ir.main_graph:`")
    return stack[-1]


def current_ir():
    """The Ir of the current graph; InvalidArgument when there is none."""
    return current_graph().ir


def has_graph():
    """Whether some `with graph:` is open on this thread."""
    return bool(_stack())
