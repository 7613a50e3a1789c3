"""Host transfers inside subgraphs (PopXL user guide "Session", "Number of host
transfers"): a host_load or host_store in a subgraph moves one transfer of its stream each
time the graph runs, so a repeat of 8 iterations moves 8.

The runtime's streams live in the main graph. A transfer inside subgraph G therefore
becomes a hidden input or output of G: host_load makes a graph input standing for the
loaded value, host_store makes the stored tensor a graph output, added after G's own
outputs when G is first called. Graph.inputs and Graph.outputs leave them out, so calls
take the arguments PopXL's do. Each call site passes them on: a caller in the main graph
gives each its own stream (an h2d stream it loads, a d2h stream of the result), a caller
that is a subgraph makes them hidden inputs and outputs of its own. A repeat of count c
passes them sliced and stacked (the repeat op's `sliced` and `stacked` attributes): c
transfers each, in iteration order.

`ir.transfers` maps each user stream to its pieces in the main graph, in program order:
(runtime stream, transfer dims), the dims' product being the transfers the piece moves
per run of the main graph. popxl.Session splits a run's host array over them and joins
the results from them. Not thread-safe (neither is the Ir)."""
import math

from plexus import context
from plexus._lib import check, lib


class Hidden:
    """One hidden input or output of a subgraph: its tensor `id`, the user `stream` it
    transfers, and `dims`, the transfer dims ((), or (c, ...) through repeats)."""

    __slots__ = ("id", "stream", "dims")

    def __init__(self, tensor_id, stream, dims):
        self.id, self.stream, self.dims = int(tensor_id), stream, tuple(dims)


def _table(ir, kind):
    """{graph id: [Hidden]} of `kind` ("inputs", "outputs", or "added": the graph ids
    whose hidden outputs are graph outputs already)."""
    return ir.hidden[kind]


def hidden_inputs(graph):
    """The hidden inputs of `graph`, in creation order (a list of Hidden)."""
    return _table(graph.ir, "inputs").get(graph.id, [])


def hidden_outputs(graph):
    """The hidden outputs of `graph`, in creation order (a list of Hidden)."""
    return _table(graph.ir, "outputs").get(graph.id, [])


def added_outputs(graph):
    """How many of `graph`'s last outputs are its hidden ones: all of them once it has been
    called, none before (a tensor may be both an output and stored: its id says nothing)."""
    return len(hidden_outputs(graph)) if graph.id in _table(graph.ir, "added") else 0


def add_piece(ir, stream, runtime_stream, dims):
    """Records that `runtime_stream`, in the main graph, moves prod(dims) transfers of user
    stream `stream` per run, after the pieces recorded before it."""
    ir.transfers.setdefault(stream, []).append((runtime_stream, tuple(dims)))


def pieces(ir, stream):
    """The pieces of user stream `stream`: [(runtime stream, dims)] in program order."""
    return ir.transfers.get(stream, [])


def transfers_per_run(ir, stream):
    """Transfers of user stream `stream` per run of the main graph."""
    return sum(math.prod(dims) for _, dims in pieces(ir, stream))


def is_piece(ir, runtime_stream):
    """Whether `runtime_stream` was made for a call site (not a user's stream)."""
    return any(s is runtime_stream and s is not user for user, ps in ir.transfers.items() for s, _ in ps)


def load(graph, stream, name, shape=None, dims=()):
    """host_load of h2d `stream` inside subgraph `graph`, moving prod(dims) transfers: a
    hidden input of `shape` (default the stream's) and the stream's dtype, named `name`
    (default the stream's name), returned as a Tensor."""
    from plexus.graph import graph_input
    t = graph_input(stream.shape if shape is None else shape, stream.dtype, name or stream.name)
    _table(graph.ir, "inputs").setdefault(graph.id, []).append(Hidden(t.id, stream, dims))
    return t


def store(graph, stream, t, dims=()):
    """host_store of Tensor `t` of subgraph `graph` into user stream `stream`, moving
    prod(dims) transfers: a hidden output, made a graph output when `graph` is first
    called. Raises ValueError once the graph has been called."""
    if graph.id in _table(graph.ir, "added"):
        raise ValueError(f"host_store into '{stream.name}' inside graph '{graph.name}' after the graph was called: "
                         "store before the first call")
    _table(graph.ir, "outputs").setdefault(graph.id, []).append(Hidden(t.id, stream, dims))


def _finish(graph):
    """Makes `graph`'s hidden outputs graph outputs, after its own, once."""
    added = _table(graph.ir, "added")
    if graph.id in added:
        return
    for h in hidden_outputs(graph):
        check(lib.plx_graph_add_output(graph.ir._ptr, graph.id, h.id))
    added.add(graph.id)


def transfer_name(ir, stream):
    """A new name for a runtime stream moving transfers of user stream `stream`."""
    return ir.unique_name(f"{stream.name}_transfer")


def _pass_input(ir, caller, h, shape, dims):
    """The caller's tensor for hidden input `h`, `shape` at the call (with the repeat's
    leading count): a stream of its own in the main graph, else a hidden input of the
    caller."""
    import plexus
    if caller.is_main:
        runtime_stream = plexus.h2d_stream(shape, h.stream.dtype, name=transfer_name(ir, h.stream))
        add_piece(ir, h.stream, runtime_stream, dims)
        return runtime_stream.tensor
    return load(caller, h.stream, None, shape, dims)


def _pass_output(ir, caller, h, result, dims):
    """Hands result tensor `result` of hidden output `h` on: to a d2h stream of its own in
    the main graph, else to a hidden output of the caller."""
    import plexus
    if caller.is_main:
        add_piece(ir, h.stream, plexus.d2h_stream(result, name=transfer_name(ir, h.stream)), dims)
    else:
        store(caller, h.stream, result, dims)


def arguments(graph, visible, count=None):
    """The arguments of a call (count None) or a repeat of `graph` from the current graph:
    `visible`, the caller's tensors for graph.inputs, with the hidden inputs' arguments put
    at their places. Returns (arguments, sliced input indices)."""
    _finish(graph)
    caller = context.current_graph()
    ir = graph.ir
    hidden = {h.id: h for h in hidden_inputs(graph)}
    visible = iter(visible)
    lead = () if count is None else (int(count),)
    args, sliced = [], []
    for index, t in enumerate(graph._core_inputs()):
        h = hidden.get(t.id)
        if h is None:
            args.append(next(visible))
            continue
        args.append(_pass_input(ir, caller, h, lead + tuple(t.shape), lead + h.dims))
        if count is not None:
            sliced.append(index)
    return args, sliced


def results(graph, outputs, count=None):
    """The visible outputs of a call or repeat of `graph` (its `outputs`, one per runtime
    output), after handing the hidden outputs' results on."""
    caller = context.current_graph()
    visible = len(outputs) - added_outputs(graph)
    lead = () if count is None else (int(count),)
    for h, result in zip(hidden_outputs(graph), outputs[visible:]):
        _pass_output(graph.ir, caller, h, result, lead + h.dims)
    return list(outputs[:visible])
