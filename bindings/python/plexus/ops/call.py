"""Calling graphs (PopXL ops.call, ops.call_with_info, ops.repeat; user guide "Graphs"):
over plx_ir_call and the repeat op. A call runs the graph's ops with the caller's tensors
in place of its inputs; repeat runs it `repeat_count` times, feeding its outputs back to
its first inputs. Host transfers inside the graph are passed on at each call site
(plexus.transfers). Not thread-safe (neither is the Ir)."""
from collections.abc import Iterable

from plexus import transfers
from plexus._lib import ffi, lib, check, last_error, tensor_ids
from plexus.graph import Graph
from plexus.ops import add_op  # plexus.ops imports this module after defining add_op
from plexus.tensor import Tensor


def _flatten(inputs):
    out = []
    for x in inputs:
        if isinstance(x, Iterable) and not isinstance(x, (str, Tensor)):
            out.extend(x)
        else:
            out.append(x)
    return out


def _as_parent(graph_input, value):
    """A caller tensor for `graph_input`: `value` itself, or a number or array made a
    constant of the input's dtype in the current graph."""
    if isinstance(value, Tensor):
        return value
    from plexus.ops import constant_like
    try:
        return constant_like(graph_input, value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"graph input '{graph_input.name or graph_input.id}' cannot take {value!r}: {e}") from None


def _parent_inputs(graph, what, inputs, inputs_dict, check_inputs):
    """The caller tensor of each input of `graph`, in input order, from positional `inputs`
    (lists flattened) and `inputs_dict` {graph input: value}. Raises ValueError (too many
    inputs, an input given twice or not at all, a key that is not an input of graph).
    `check_inputs` False is accepted, but every input must still be given: a graph input
    without a caller tensor has no value on Plexus (docs/python.md)."""
    if not isinstance(graph, Graph) or graph.is_main:
        raise TypeError(f"the {what} graph must be a subgraph (a plexus.Graph from Ir.create_graph), got {graph!r}")
    graph_inputs = graph.inputs
    inputs = _flatten(inputs)
    if len(inputs) > len(graph_inputs):
        raise ValueError(f"Too many inputs have been provided to the {what} graph: {len(inputs)} positional inputs "
                         f"for {len(graph_inputs)} inputs of graph '{graph.name}'")
    values = dict(zip(graph_inputs, inputs))
    for key, value in (inputs_dict or {}).items():
        if key not in graph_inputs:
            raise ValueError(f"{key!r} in inputs_dict is not an input of the {what} graph '{graph.name}'")
        if key in values:
            raise ValueError(f"Graph input {key!r} of the {what} graph '{graph.name}' is given twice")
        values[key] = value
    missing = [t for t in graph_inputs if t not in values]
    if missing:
        unchecked = "" if check_inputs else " (check_inputs=False: a Plexus call still needs every input)"
        raise ValueError(f"Not enough inputs have been provided to the {what} graph '{graph.name}': "
                         f"{len(missing)} of its {len(graph_inputs)} inputs have none "
                         f"({', '.join(repr(t.name) for t in missing)}){unchecked}")
    return [_as_parent(t, values[t]) for t in graph_inputs]


class CallSiteInfo:
    """One call of a graph (PopXL ops.call_with_info's CallSiteInfo): `called_graph`, the
    caller's `inputs` (one per graph input) and `outputs` (one per graph output), and the
    maps between the graph's tensors and the caller's. Of a repeat (repeat_with_info) the
    outputs are the last iteration's, and only inputs and outputs map to the caller. Not
    thread-safe."""

    def __init__(self, graph, site, inputs, outputs):
        self._graph, self._inputs, self._outputs = graph, tuple(inputs), tuple(outputs)
        self._site = None if site is None else int(site)  # None: a repeat (no call site in the C API)

    @property
    def called_graph(self):
        """The Graph this call runs."""
        return self._graph

    @property
    def inputs(self):
        """The caller's tensors passed to the graph's inputs, in input order."""
        return self._inputs

    @property
    def outputs(self):
        """The caller's tensors the call's outputs are, in the graph's output order."""
        return self._outputs

    def parent_input(self, idx):
        """The caller's tensor at input `idx`."""
        return self._inputs[idx]

    def parent_output(self, idx):
        """The caller's tensor of output `idx`."""
        return self._outputs[idx]

    def graph_to_parent_input_index(self, idx):
        """The call's input index of graph input `idx` (the same index: a call passes the
        graph's inputs in order)."""
        return idx

    parent_to_graph_input_index = graph_to_parent_output_index = parent_to_graph_output_index = \
        graph_to_parent_input_index

    def graph_to_parent(self, graph_tensor):
        """The caller's tensor holding `graph_tensor` at this call: an input's argument, an
        output's result, or an intermediate's value (the forward tensors a gradient graph
        reads). Raises ValueError for a tensor the called graph does not have, and for an
        intermediate of a call that reuses code (only its inputs and outputs have parents)."""
        ir = self._graph.ir
        if self._site is None:
            return self._repeat_parent(graph_tensor)
        out = ffi.new("plx_tensor*")
        status = lib.plx_call_site_get_parent(ir._ptr, self._site, graph_tensor.id, out)
        if status == lib.PLX_ERR_INVALID_ARGUMENT:
            message = last_error()
            if "has no parent tensor" in message:
                raise ValueError(f"{graph_tensor!r}: {message}")
            raise ValueError(f"{graph_tensor!r} is not a tensor of the called graph '{self._graph.name}'")
        check(status)
        return Tensor(ir, out[0])

    def _repeat_parent(self, graph_tensor):
        for graph_tensors, parents in ((self._graph.inputs, self._inputs), (self._graph.outputs, self._outputs)):
            if graph_tensor in graph_tensors:
                return parents[graph_tensors.index(graph_tensor)]
        raise ValueError(f"{graph_tensor!r} is not an input or output of the repeated graph '{self._graph.name}': "
                         "a repeat keeps no intermediate tensor of its iterations")

    def parent_to_graph(self, parent_tensor):
        """The graph input that `parent_tensor` is passed to. Raises ValueError when it is
        not an input of this call."""
        for graph_input, parent in zip(self._graph.inputs, self._inputs):
            if parent == parent_tensor:
                return graph_input
        raise ValueError(f"{parent_tensor!r} is not an input of this call of graph '{self._graph.name}'")

    def set_parent_input_modified(self, parent_tensor, infer_modified_regions=False):
        """Marks the caller's `parent_tensor`, an input of this call, modified: the writes
        the graph makes to it in place (scaled_add_, copy_var_update_, ...) reach it
        (PopXL CallSiteInfo.set_parent_input_modified). `infer_modified_regions` is
        accepted for PopXL's signature: the whole tensor is marked either way. Raises
        ValueError when it is not an input of this call, NotImplementedError on a repeat's
        (its inputs are passed by value)."""
        index = self._graph._core_inputs().index(self.parent_to_graph(parent_tensor))
        if self._site is None:
            raise NotImplementedError(f"{parent_tensor!r}: the inputs of a repeat are passed by value on Plexus; "
                                      f"graph '{self._graph.name}' cannot write to the caller's tensor")
        check(lib.plx_call_site_set_input_modified(self._graph.ir._ptr, self._site, index))


def call_with_info(graph, *inputs, inputs_dict=None, check_inputs=True, reuse_code=False):
    """Calls `graph` from the current graph and returns its CallSiteInfo (PopXL
    ops.call_with_info). `inputs` fill the graph's inputs in order (lists are flattened),
    `inputs_dict` maps graph inputs to values; numbers and arrays become constants.
    Inputs are passed by value except those made with by_ref=True (TensorByRef) and those
    set_parent_input_modified marks later. With reuse_code=True (Plexus's; PopXL has no
    such argument) the call is one op running the graph's kernels, bound once per device
    for every such call site (plx_call_options.reuse_code): inputs by value, and the call
    site maps only the graph's inputs and outputs. Raises ValueError (the inputs do not
    match), TypeError (a value that cannot be a tensor), ShapeMismatch / DTypeMismatch (an
    argument's type), InvalidArgument (a tensor of another graph, a recursive call, a
    by_ref input with reuse_code)."""
    parents = _parent_inputs(graph, "called", inputs, inputs_dict, check_inputs)
    args, _ = transfers.arguments(graph, parents)
    ir = graph.ir
    modified = ffi.new("uint8_t[]", [int(t.id in ir.by_ref_inputs) for t in graph._core_inputs()] or [0])
    options = ffi.new("plx_call_options*")
    lib.plx_call_options_init(options)
    options.modified = modified
    options.reuse_code = int(bool(reuse_code))
    num_outputs = len(graph._core_outputs())
    outputs = ffi.new("plx_tensor[]", max(num_outputs, 1))
    site = ffi.new("plx_call_site*")
    check(lib.plx_ir_call(ir._ptr, graph.id, tensor_ids(args), len(args), options, outputs, num_outputs, ffi.NULL,
                          site))
    results = transfers.results(graph, [Tensor(ir, outputs[i]) for i in range(num_outputs)])
    return CallSiteInfo(graph, site[0], parents, results)


def call(graph, *inputs, inputs_dict=None, check_inputs=True, reuse_code=False):
    """Calls `graph` (PopXL ops.call): call_with_info(...).outputs, a tuple of Tensors
    (one per graph output; `(y,) = ops.call(g, x)`)."""
    return call_with_info(graph, *inputs, inputs_dict=inputs_dict, check_inputs=check_inputs,
                          reuse_code=reuse_code).outputs


def repeat(graph, repeat_count, *inputs, inputs_dict=None, check_inputs=True):
    """Runs `graph` repeat_count times (PopXL ops.repeat): output j of one iteration is input
    j of the next; the other inputs are the same every iteration. Returns the last
    iteration's outputs (a tuple; with repeat_count 0, the first inputs). Not unrolled.
    Raises ValueError (repeat_count < 0, fewer inputs than outputs, inputs that do not
    match as for call), ShapeMismatch (an output of another type than its input) and
    NotImplementedError (an input made with TensorByRef: a repeat passes inputs by value)."""
    return repeat_with_info(graph, repeat_count, *inputs, inputs_dict=inputs_dict, check_inputs=check_inputs).outputs


def repeat_with_info(graph, repeat_count, *inputs, inputs_dict=None, check_inputs=True):
    """ops.repeat returning a CallSiteInfo (PopXL ops.repeat_with_info): `called_graph` is
    `graph`, `inputs` the caller's tensors, `outputs` the last iteration's. Raises as
    repeat does."""
    if int(repeat_count) < 0:
        raise ValueError(f"Repeat trip count for repeat of {graph.name} of {repeat_count} must be >= 0.")
    parents = _parent_inputs(graph, "repeated", inputs, inputs_dict, check_inputs)
    num_outputs = len(graph.outputs)
    if len(parents) < num_outputs:
        raise ValueError(f"To repeat the subgraph ({graph.name}) the number of inputs must be greater than or equal "
                         f"to the number of outputs. {len(parents)} < {num_outputs}")
    ir = graph.ir
    by_ref = [t.name for t in graph.inputs if t.id in ir.by_ref_inputs]
    if by_ref:
        raise NotImplementedError(f"inputs {by_ref} of graph '{graph.name}' are TensorByRef: the inputs of a repeat "
                                  "are passed by value on Plexus")
    count = int(repeat_count)
    if count == 0 and (transfers.hidden_inputs(graph) or transfers.hidden_outputs(graph)):
        raise ValueError(f"Repeat trip count for repeat of {graph.name} must be >= 1 when the graph holds "
                         "host_load or host_store ops (each iteration moves one transfer)")
    args, sliced = transfers.arguments(graph, parents, count)
    stacked = transfers.added_outputs(graph)  # the hidden outputs, the last ones: stacked per iteration
    outputs = add_op("repeat", args, {"graph": graph.id, "count": count, "sliced": sliced, "stacked": stacked}, ir)
    outputs = () if outputs is None else (outputs,) if isinstance(outputs, Tensor) else outputs
    results = transfers.results(graph, outputs, count)
    return CallSiteInfo(graph, None, parents, results)
