"""Graphs of an Ir (PopXL popxl.Graph; user guide "Graphs"): the main graph and subgraphs
with ordered inputs and outputs, made from a Python function or a Module's build by
Ir.create_graph, called with ops.call / ops.repeat (plexus.ops.call).

Over the C API's graphs (plexus.h section 14: plx_ir_create_graph, plx_graph_*,
plx_ir_begin_graph). Not thread-safe: build one Ir from one thread at a time."""
import inspect
import typing

from plexus import context, dtypes, transfers
from plexus._lib import ffi, lib, check, read_list, read_text
from plexus.tensor import Constant, Tensor, TensorSpec, Variable, note_graph, tensors_of_graph


class TensorByRef(Tensor):
    """A type hint (PopXL popxl.TensorByRef): a create_graph function's argument hinted
    `TensorByRef` (or List[TensorByRef]) becomes an input passed by reference: every call
    of the graph marks it modified (CallSiteInfo.set_parent_input_modified), so that
    in-place writes inside reach the caller's tensor. Never instantiated."""

    __slots__ = ()


class Graph:
    """One graph of an Ir (PopXL popxl.Graph): `ir`, `id` (plx_graph), `name`. `with graph:`
    makes it the current graph on this thread: ops, constants, graph_input and
    graph_output go into it. Variables and streams live in the main graph only (a subgraph
    reaches them through its inputs; PopXL's rule). Made by Ir.main_graph,
    Ir.create_empty_graph and Ir.create_graph; equal objects name the same graph. Not
    thread-safe."""

    __slots__ = ("ir", "id", "name")

    def __init__(self, ir, graph_id, name):
        self.ir, self.id, self.name = ir, int(graph_id), name

    def __enter__(self):
        check(lib.plx_ir_begin_graph(self.ir._ptr, self.id))
        context.push(self)
        return self

    def __exit__(self, *exc):
        context.pop(self)
        check(lib.plx_ir_end_graph(self.ir._ptr))
        return False

    @property
    def is_main(self):
        """Whether this is the Ir's main graph."""
        return self.id == self.ir._main_graph_id

    def _tensors(self, getter):
        if self.is_main:
            return ()
        ids = read_list(getter, "plx_tensor", self.ir._ptr, self.id)
        tensors = tuple(Tensor(self.ir, i, self._local_name(i)) for i in ids)
        for t in tensors:
            note_graph(t, self.id)  # a gradient graph's inputs are first seen here
        return tensors

    def _local_name(self, tensor_id):
        """A tensor's name without this graph's "<graph>/" prefix (PopXL's Tensor.name)."""
        name = read_text(lib.plx_ir_get_tensor_name, self.ir._ptr, tensor_id)
        return name[len(self.name) + 1:] if name.startswith(self.name + "/") else name

    @property
    def inputs(self):
        """The graph's inputs, in call order (tuple of Tensors; () for the main graph),
        without those that stand for its host_loads (plexus.transfers)."""
        hidden = {h.id for h in transfers.hidden_inputs(self)}
        return tuple(t for t in self._core_inputs() if t.id not in hidden)

    @property
    def outputs(self):
        """The graph's outputs, in order (tuple of Tensors; () for the main graph), without
        those that carry its host_stores (plexus.transfers)."""
        outputs = self._core_outputs()
        return outputs[:len(outputs) - transfers.added_outputs(self)]

    def _core_inputs(self):
        """Every input of the graph in the runtime, hidden ones included."""
        return self._tensors(lib.plx_graph_get_inputs)

    def _core_outputs(self):
        """Every output of the graph in the runtime, hidden ones included."""
        return self._tensors(lib.plx_graph_get_outputs)

    def _seen(self, cls):
        return tuple(kind(self.ir, i, name) for i, kind, name in tensors_of_graph(self.ir, self.id)
                     if issubclass(kind, cls))

    @property
    def tensors(self):
        """Every tensor of this graph that the Python API has made or returned, in that
        order (PopXL Graph.tensors): inputs, variables, constants, stream tensors, op and
        call outputs, autodiff's gradients; each a Tensor, Variable or Constant as first
        returned. Not listed: tensors the runtime makes without returning them (autodiff's
        intermediate gradients, a call's copies of its callee's intermediates, a gradient
        graph's inner tensors), as the C API has no call listing a graph's tensors. A
        tuple."""
        return self._seen(Tensor)

    @property
    def variables(self):
        """The Variables of this graph, in creation order (PopXL Graph.variables): those of
        the Ir for the main graph (plexus.variable and its remote and replica-sharded
        forms), () for a subgraph, which cannot hold variables. A tuple."""
        return self._seen(Variable)

    @property
    def constants(self):
        """The Constants made in this graph (plexus.constant, and the constants numbers and
        arrays among op inputs become), in creation order (PopXL Graph.constants). A
        tuple."""
        return self._seen(Constant)

    def __eq__(self, other):
        return isinstance(other, Graph) and other.ir is self.ir and other.id == self.id

    def __hash__(self):
        return hash((id(self.ir), self.id))

    def __repr__(self):
        return f"<plexus.Graph '{self.name}' {len(self.inputs)} inputs, {len(self.outputs)} outputs>"


def gcg():
    """The current graph (PopXL popxl.gcg()): the innermost `with graph:` on this thread.
    Raises plexus.InvalidArgument when none is open."""
    return context.current_graph()


def gmg():
    """The main graph of the current graph's Ir (PopXL popxl.gmg())."""
    return context.current_ir().main_graph


def graph_input(shape, dtype, name=None, by_ref=False, meta_shape=None):
    """Appends an input of `shape` (ints) and `dtype` to the current graph, a subgraph, and
    returns it (PopXL popxl.graph_input). `by_ref`: every call passes it by reference
    (TensorByRef). `meta_shape` is accepted for PopXL's signature; it must be None or empty
    (replica-sharded inputs take their shard shape). Raises InvalidArgument in the main
    graph, for a bad shape or dtype, or a non-empty meta_shape."""
    from plexus.errors import InvalidArgument
    if meta_shape:
        raise InvalidArgument(f"graph_input '{name}': meta_shape is not supported (pass the shard's shape)")
    graph = gcg()
    shape = tuple(int(d) for d in shape)
    name = context.tensor_name(graph.ir, name, "input")
    dims = ffi.new("int64_t[]", list(shape) or [0])
    out = ffi.new("plx_tensor*")
    check(lib.plx_graph_add_input(graph.ir._ptr, graph.id, name.encode(), dtypes.of(dtype).code, dims, len(shape),
                                  out))
    if by_ref:
        graph.ir.by_ref_inputs.add(out[0])
    return Tensor(graph.ir, out[0], name)


def graph_output(t):
    """Appends Tensor `t`, a tensor of the current graph, to its outputs (PopXL
    popxl.graph_output). Raises InvalidArgument in the main graph or for a tensor of
    another graph, ValueError in a graph holding host_stores that was called already."""
    graph = gcg()
    if transfers.added_outputs(graph):
        raise ValueError(f"graph_output in graph '{graph.name}' after it was called: its host_store outputs follow "
                         "its own outputs, so add every output before the first call")
    check(lib.plx_graph_add_output(graph.ir._ptr, graph.id, t.id))


def _is_tensor_hint(hint):
    return hint is TensorByRef or hint in (typing.List[TensorByRef], typing.Tuple[TensorByRef])


def _inputs_for(name, param, arg):
    """The graph inputs standing for argument `name` (value `arg`): a Tensor, a list or
    tuple of Tensors, or the Tensors of **kwargs; the argument itself when it holds none."""
    by_ref = _is_tensor_hint(param.annotation)
    if isinstance(arg, (Tensor, TensorSpec)):
        return graph_input(arg.shape, arg.dtype, name, by_ref=by_ref)
    if isinstance(arg, dict) and param.kind is not inspect.Parameter.VAR_KEYWORD:
        return arg
    if not isinstance(arg, (list, tuple, dict)) or not arg:
        return arg
    items = list(arg.items()) if isinstance(arg, dict) else [(f"{name}_{i}", a) for i, a in enumerate(arg)]
    kinds = {isinstance(a, (Tensor, TensorSpec)) for _, a in items}
    if kinds == {False}:
        return arg
    if len(kinds) > 1:
        raise TypeError(f"A {type(arg).__name__} argument can't contain a mixture of Tensors and other types. "
                        f"Arg name: {name}. Value: {arg}")
    made = {n: graph_input(a.shape, a.dtype, n, by_ref=by_ref) for n, a in items}
    return made if isinstance(arg, dict) else list(made.values())


def create_graph(ir, fn, *args, **kwargs):
    """Ir.create_graph (PopXL): a subgraph of `ir` from Python callable `fn` or a Module's
    build, named after its qualified name. Tensor (or TensorSpec) arguments (alone, in lists or tuples, in
    *args or **kwargs) become graph inputs of their shape and dtype, in signature order,
    then the graph_input calls fn makes; the other arguments are passed as they are. fn's
    result (None, a Tensor or an iterable of Tensors) becomes the outputs. Raises TypeError
    (fn not callable, a list mixing Tensors and other values) and ValueError (arguments
    that do not match fn's signature, a result that is not Tensors)."""
    from plexus.module import Module
    if isinstance(fn, Module):
        qualname, func = type(fn).__qualname__, fn.build
    elif callable(fn) and hasattr(fn, "__qualname__"):
        qualname, func = fn.__qualname__, fn
    else:
        raise TypeError("Callable `fn` must be either a function or a class that extends popxl.Module")
    signature = inspect.signature(func, follow_wrapped=True)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as e:
        raise ValueError("The arguments, `args` and `kwargs`, do not match the signature of the function `fn`.") from e
    bound.apply_defaults()
    graph = ir.create_empty_graph(qualname)
    with graph:
        for name, arg in list(bound.arguments.items()):
            bound.arguments[name] = _inputs_for(name, signature.parameters[name], arg)
        outputs = fn(*bound.args, **bound.kwargs)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        elif outputs is None:
            outputs = ()
        elif not (isinstance(outputs, typing.Iterable) and all(isinstance(t, Tensor) for t in outputs)):
            raise ValueError("Output of subgraph must be None, a Tensor or an iterable of Tensors.")
        for t in outputs:
            graph_output(t)
    return graph
