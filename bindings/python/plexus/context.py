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


def name_scopes():
    """The names of the open name scopes on this thread, outermost first (a new list; PopXL
    Context.name_scopes). popxl.name_scope pushes and pops them."""
    return list(getattr(_local, "scopes", []))


def push_name_scope(name):
    """Opens name scope `name` (a non-empty str) on this thread; InvalidArgument names the
    argument otherwise."""
    from plexus.errors import InvalidArgument
    if not isinstance(name, str) or not name:
        raise InvalidArgument(f"name_scope: name must be a non-empty str, got {name!r}")
    if not hasattr(_local, "scopes"):
        _local.scopes = []
    _local.scopes.append(name)


def pop_name_scope():
    """Closes the innermost name scope of this thread and returns its name."""
    return _local.scopes.pop()


def tensor_name(ir, name, default=None):
    """The name a new tensor of `ir` gets (PopXL Graph._create_tensor_id's rule): the open
    name scopes and `name` joined by '/', or, with no `name`, the scopes and `default` made
    unique by ir.unique_name. None when both `name` and `default` are None."""
    if not name:
        if default is None:
            return None
        return ir.unique_name("/".join((*name_scopes(), default)))
    return "/".join((*name_scopes(), name))
