"""PopXL's device-to-host streams: d2h_stream(shape, dtype, name) declares one,
ops.host_store(stream, t) copies `t` into it at that point of the program (over
plexus.d2h_stream, which does both at once, and plexus.transfers inside subgraphs)."""
import plexus
from plexus import context, dtypes, transfers


class DeviceToHostStream:
    """A device-to-host stream (PopXL popxl.DeviceToHostStream): `shape`, `dtype`, `name`;
    filled by ops.host_store. Keys Session.run's outputs. Not thread-safe."""

    __slots__ = ("ir", "shape", "dtype", "name")

    def __init__(self, ir, shape, dtype, name):
        self.ir, self.shape, self.dtype, self.name = ir, tuple(int(d) for d in shape), dtypes.of(dtype), name

    def __repr__(self):
        return f"<popxl.DeviceToHostStream '{self.name}' {self.dtype.name}{list(self.shape)}>"


def d2h_stream(shape, dtype, name=None):
    """A device-to-host stream of `shape` and `dtype` in the current graph's Ir, a popxl.Ir
    (PopXL popxl.d2h_stream); ops.host_store fills it. Named as PopXL names it: the open
    name scopes and `name` (default a unique "d2h_stream") joined by '/'. Raises TypeError
    for a plexus.Ir."""
    ir = context.current_ir()
    if not hasattr(ir, "stored_d2h_streams"):
        raise TypeError("popxl.d2h_stream needs a popxl.Ir (a plexus.Ir takes plexus.d2h_stream(t))")
    return DeviceToHostStream(ir, shape, dtype, context.tensor_name(ir, name, "d2h_stream"))


def host_store(d2h_stream, t):
    """Copies tensor `t` to the host through `d2h_stream` at this point of the program
    (PopXL ops.host_store): one transfer each time the graph holding it runs (a
    host_store inside a repeated graph moves one per iteration: plexus.transfers).
    Several host_stores of one stream fill its transfers in program order. Raises
    ValueError when t's shape or dtype is not the stream's, or when the subgraph holding
    it was called already."""
    if (tuple(t.shape), t.dtype) != (d2h_stream.shape, d2h_stream.dtype):
        raise ValueError(f"host_store: tensor {t!r} does not match stream '{d2h_stream.name}' "
                         f"({d2h_stream.dtype.name}{list(d2h_stream.shape)})")
    ir = d2h_stream.ir
    graph = context.current_graph()
    if graph.is_main:
        name = transfers.transfer_name(ir, d2h_stream) if transfers.pieces(ir, d2h_stream) else d2h_stream.name
        transfers.add_piece(ir, d2h_stream, plexus.d2h_stream(t, name=name), ())
    else:
        transfers.store(graph, d2h_stream, t)
    if d2h_stream not in ir.stored_d2h_streams:
        ir.stored_d2h_streams.append(d2h_stream)
