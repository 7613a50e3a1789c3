"""Graph autodiff (PopXL popxl.transforms.autodiff, GradGraphInfo, ExpectedConnection; user
guide "Autodiff"): the gradient graph of a subgraph and how to call it. Over
plx_graph_autodiff and plx_graph_get_expected_connections. Not thread-safe."""
import enum

from plexus._lib import ffi, lib, check, read_list, tensor_ids
from plexus.graph import Graph
from plexus.tensor import Tensor


class ExpectedConnectionType(enum.Enum):
    """What a gradient graph's input or output is to the forward graph (PopXL
    ExpectedConnectionType): Fwd, a forward tensor itself; FwdGrad, its gradient."""

    Fwd = "Fwd"
    FwdGrad = "FwdGrad"


class ExpectedConnection:
    """One input or output of a gradient graph (PopXL ExpectedConnection): `fwd_tensor`, a
    tensor of the forward graph, and `connection_type`."""

    __slots__ = ("fwd_tensor", "connection_type")

    def __init__(self, fwd_tensor, connection_type):
        self.fwd_tensor, self.connection_type = fwd_tensor, connection_type

    def __repr__(self):
        return f"({self.connection_type.name}, {self.fwd_tensor!r})"


def _connections(ir, grad_graph_id, outputs):
    def get(*args):
        return lib.plx_graph_get_expected_connections(*args, ffi.NULL)

    found = read_list(get, "plx_expected_connection", ir._ptr, grad_graph_id, outputs)
    kinds = {lib.PLX_CONNECTION_FWD: ExpectedConnectionType.Fwd,
             lib.PLX_CONNECTION_FWD_GRAD: ExpectedConnectionType.FwdGrad}
    return tuple(ExpectedConnection(Tensor(ir, c.fwd_tensor), kinds[c.type]) for c in found)


class GradGraphInfo:
    """The gradient graph of a forward graph and its connections (PopXL GradGraphInfo):
    `graph`, `forward_graph`, `expected_inputs` (the gradients of the provided outputs
    first, then the forward tensors it reads) and `expected_outputs` (the gradients of the
    required inputs). Not thread-safe."""

    def __init__(self, graph, forward_graph):
        self.graph, self.forward_graph = graph, forward_graph
        self.expected_inputs = _connections(graph.ir, graph.id, 0)
        self.expected_outputs = _connections(graph.ir, graph.id, 1)

    @property
    def inputs(self):
        """The gradient graph's inputs (Graph.inputs)."""
        return self.graph.inputs

    @property
    def outputs(self):
        """The gradient graph's outputs (Graph.outputs)."""
        return self.graph.outputs

    def inputs_dict(self, fwd_call_info):
        """{gradient graph input: caller tensor} for every Fwd input, read from the forward
        call `fwd_call_info` (a CallSiteInfo of forward_graph): ops.call's inputs_dict;
        the gradients of the provided outputs are passed positionally."""
        return {grad_in: fwd_call_info.graph_to_parent(c.fwd_tensor)
                for grad_in, c in zip(self.graph.inputs, self.expected_inputs)
                if c.connection_type is ExpectedConnectionType.Fwd}

    def fwd_graph_ins_to_grad_parent_outs(self, grad_call_info):
        """{forward graph input: the gradient call's output holding its gradient}."""
        return {c.fwd_tensor: out for c, out in zip(self.expected_outputs, grad_call_info.outputs)}

    def fwd_parent_ins_to_grad_parent_outs(self, fwd_call_info, grad_call_info):
        """{forward call's input tensor: the gradient call's output holding its gradient}."""
        return {fwd_call_info.graph_to_parent(t): out
                for t, out in self.fwd_graph_ins_to_grad_parent_outs(grad_call_info).items()}

    def get_input_tensors(self):
        """The forward tensors of expected_inputs, in order."""
        return tuple(c.fwd_tensor for c in self.expected_inputs)

    def get_output_tensors(self):
        """The forward tensors of expected_outputs, in order."""
        return tuple(c.fwd_tensor for c in self.expected_outputs)


def autodiff(graph, grads_provided=None, grads_required=None, called_graphs_grad_info=None,
             return_all_grad_graphs=False):
    """The gradient graph of subgraph `graph` (PopXL transforms.autodiff), named
    "<graph>_grad". grads_provided: outputs whose gradients a call passes (default: every
    float32 output); grads_required: inputs whose gradients it returns (default: every
    float32 input a provided output depends on). Calls inside `graph` are differentiated
    through their ops, so `called_graphs_grad_info` is accepted and not needed. Returns a
    GradGraphInfo, or [it] with return_all_grad_graphs (no separate gradient graphs are
    made for called graphs). Raises InvalidArgument (the main graph, a provided tensor
    that is not an output, a required one that is not an input or that no provided output
    depends on, an op without a gradient: the message names the graph and tensor)."""
    if not isinstance(graph, Graph):
        raise TypeError(f"autodiff takes a plexus.Graph, got {graph!r}")
    ir = graph.ir
    options = ffi.new("plx_autodiff_options*")
    lib.plx_autodiff_options_init(options)
    keep = []
    if grads_provided is not None:
        keep.append(tensor_ids(grads_provided))
        options.grads_provided, options.num_grads_provided = keep[-1], len(grads_provided)
    if grads_required is not None:
        keep.append(tensor_ids(grads_required))
        options.grads_required, options.num_grads_required = keep[-1], len(grads_required)
    out = ffi.new("plx_graph*")
    check(lib.plx_graph_autodiff(ir._ptr, graph.id, options, out))
    info = GradGraphInfo(Graph(ir, out[0], f"{graph.name}_grad"), graph)
    return [info] if return_all_grad_graphs else info
