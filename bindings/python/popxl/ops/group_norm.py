"""popxl.ops.group_norm: PopXL's group normalisation, plexus.layers.group_norm."""
import numbers

from plexus import layers
from plexus.errors import InvalidArgument
from plexus.graph import gcg
from popxl.ops.utils import check_in_graph


def group_norm(t, weight, bias, num_groups, eps=1e-5):
    """Group normalisation (PopXL ops.group_norm; Wu and He 2018, PyTorch F.group_norm):
    each sample's num_groups groups of C / num_groups consecutive channels normalised
    together over their channels and positions, (x - mean) / sqrt(var + eps) with the
    biased variance, then times weight and plus bias per channel.

    t: float32 (N, C, ...) of the current graph, rank >= 2. weight, bias: float32 (C,).
    num_groups: an int dividing C. eps: a float >= 0. Returns float32 of t's shape.
    Raises TypeError / ValueError (an argument not a Tensor of the current graph),
    InvalidArgument (num_groups not an int, eps negative), ShapeMismatch (num_groups not
    dividing C, weight or bias not (C,), t of rank < 2)."""
    check_in_graph(gcg(), t=t, weight=weight, bias=bias)
    if isinstance(num_groups, bool) or not isinstance(num_groups, numbers.Integral):
        raise InvalidArgument(f"group_norm: num_groups must be an int, got {num_groups!r}")
    if not eps >= 0:
        raise InvalidArgument(f"group_norm: eps must be >= 0, got {eps!r}")
    return layers.group_norm(t, int(num_groups), float(eps), weight, bias)


def layer_norm(t, weight, bias, eps=1e-5):
    """Layer normalisation as PopXL defines it (PopXL ops.layer_norm): group_norm with one
    group, so each sample t[n] is normalised over all its channels and positions together,
    then times weight and plus bias per channel (dim 1). For t (N, C) that is PyTorch's
    F.layer_norm over C; for t (N, C, ...) it is not plexus.ops.layer_norm, which normalises
    over the last dim only (PopXL's name takes PopXL's meaning).

    t: float32 (N, C, ...) of the current graph. weight, bias: float32 (C,). eps: a float >= 0.
    Returns float32 of t's shape. Raises as group_norm."""
    return group_norm(t, weight, bias, 1, eps)
