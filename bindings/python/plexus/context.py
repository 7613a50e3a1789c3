"""The current graph: PopXL's `with ir.main_graph:` makes ops implicit in that graph.

A per-thread stack of Ir objects; plexus.variable, plexus.ops.* and friends add to the
top one. Building one Ir from several threads at once is not supported (the C API's
rule for plx_ir)."""
import threading

_local = threading.local()


def _stack():
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def push(ir):
    """Makes `ir` current on this thread (entering `with ir.main_graph:`)."""
    _stack().append(ir)


def pop(ir):
    """Undoes push(ir); contexts must close innermost first."""
    stack = _stack()
    if not stack or stack[-1] is not ir:
        raise RuntimeError("plexus: graph contexts closed out of order")
    stack.pop()


def current_ir():
    """The Ir of the innermost `with ir.main_graph:` on this thread.
    Raises plexus.InvalidArgument when there is none."""
    stack = _stack()
    if not stack:
        from plexus.errors import InvalidArgument
        raise InvalidArgument("no current graph: build ops inside `with ir.main_graph:`")
    return stack[-1]
