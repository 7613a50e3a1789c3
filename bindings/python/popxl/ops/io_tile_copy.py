"""popxl.ops.io_tile_copy: PopXL's copy between an IPU's compute and I/O tiles."""
from plexus import ops
from plexus.graph import gcg
from popxl.ops.utils import check_in_graph


def io_tile_copy(t):
    """A copy of t in a buffer of its own (PopXL ops.io_tile_copy, which moves t between
    the compute tiles and the I/O tiles). A CPU has no I/O tiles, so this is the runtime's
    `identity`: t's shape, dtype and values in a distinct tensor, the gradient passed
    through. t: a Tensor of the current graph (TypeError / ValueError otherwise)."""
    check_in_graph(gcg(), t=t)
    return ops.identity(t)
