"""How a popxl.Session moves a run's host arrays (PopXL user guide "Session": "Number of
host transfers", "Data input shape"): the array of a stream is [num_host_transfers,
replication_factor] + its shape (dims of 1 left out), one row per transfer, and the
transfers go to the program's host_loads and come from its host_stores in program order.

The main graph runs `runs` times per session.run (the plexus.Session's
device_iterations): num_host_transfers divided by T, the most transfers any stream makes
per run of the main graph (plexus.transfers), which must divide it. Run i takes the
block of rows [i T, (i + 1) T); a stream making fewer transfers per run uses the first
ones of each block (an output's other rows are zeros), as PopXL's single run uses the
first rows of its buffers. Each stream's transfers are split over its runtime streams
(its pieces) and joined back from them. Pure functions of the Ir and the arrays;
thread-safe."""
import math

import numpy as np

from plexus import transfers
from plexus.errors import ShapeMismatch


def transfers_per_block(ir):
    """T: the most transfers any stream makes per run of the main graph (0 when none)."""
    return max((transfers.transfers_per_run(ir, s) for s in ir.transfers), default=0)


def runs_per_call(ir):
    """Runs of the main graph per session.run: num_host_transfers / transfers_per_block;
    1 when no stream transfers anything. Raises ValueError, naming every stream's
    transfers per run, when transfers_per_block does not divide num_host_transfers."""
    t, n = transfers_per_block(ir), ir.num_host_transfers
    if t == 0:
        return 1
    if n % t:
        counts = ", ".join(f"'{s.name}': {transfers.transfers_per_run(ir, s)}" for s in ir.transfers)
        raise ValueError(f"num_host_transfers {n} is not a whole multiple of the most transfers a stream makes per "
                         f"run of the main graph ({counts}); Plexus runs the main graph num_host_transfers / {t} "
                         "times per run (docs/python.md, \"import popxl\")")
    return n // t


def _full_shape(ir, stream):
    return (ir.num_host_transfers, ir.replication_factor) + tuple(stream.shape)


def user_shape(ir, stream):
    """The host array shape of `stream` in a run: [num_host_transfers, replication_factor]
    + shape, each of the first two left out when 1 (PopXL's)."""
    n, r = ir.num_host_transfers, ir.replication_factor
    return tuple(d for d in (n, r) if d > 1) + tuple(stream.shape)


def split_input(ir, session, stream, array):
    """{runtime stream: array} for user h2d `stream` given host `array` (user_shape, or
    the full [N, R] + shape). The stream's own tensor is loaded each run even when no
    main-graph host_load reads it: it then gets zeros. Raises ShapeMismatch naming the
    stream."""
    pieces = transfers.pieces(ir, stream)
    out = {}
    if all(s is not stream for s, _ in pieces):  # only subgraphs read it, or nothing
        out[stream] = np.zeros(session.host_shape(stream), dtype=stream.dtype.numpy)
    if not pieces:
        return out
    array = np.asarray(array)
    full = _full_shape(ir, stream)
    if array.size != math.prod(full):
        raise ShapeMismatch(f"input for stream '{stream.name}' has shape {list(array.shape)}, expected "
                            f"{list(user_shape(ir, stream))} ([num_host_transfers, replicas] + shape, dims of 1 left out)")
    blocks = array.reshape((-1, transfers_per_block(ir)) + full[1:])  # [runs, T, R] + shape
    offset = 0
    for runtime_stream, dims in pieces:
        n = math.prod(dims)
        block = np.moveaxis(blocks[:, offset:offset + n], 1, 2)  # [runs, R, n] + shape
        out[runtime_stream] = np.ascontiguousarray(block).reshape(session.host_shape(runtime_stream))
        offset += n
    return out


def join_output(ir, stream, results):
    """The host array of user d2h `stream` (user_shape) from `results` {runtime stream:
    array} of one run."""
    full = _full_shape(ir, stream)
    parts = [np.moveaxis(results[s].reshape((-1, full[1], math.prod(dims)) + full[2:]), 2, 1)
             for s, dims in transfers.pieces(ir, stream)]
    joined = np.concatenate(parts, axis=1)  # [runs, transfers per run, R] + shape
    blocks = np.zeros((joined.shape[0], transfers_per_block(ir)) + full[1:], dtype=joined.dtype)
    blocks[:, :joined.shape[1]] = joined
    return blocks.reshape(user_shape(ir, stream))
