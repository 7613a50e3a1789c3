"""popxl.ops.conv: PopXL's convolution (ops.conv), plexus.layers.conv2d with PopXL's
arguments (ONNX Conv's conventions)."""
from plexus import layers
from plexus.graph import gcg
from plexus.errors import InvalidArgument, ShapeMismatch
from popxl.ops.utils import as_2d, check_in_graph, from_2d, spatial_args


def _rank_default(value, default):
    """None for PopXL's 2-D default value (all ones or zeros), which stands for a 1-D
    input's too; any other value as given."""
    return None if isinstance(value, (list, tuple)) and tuple(value) == default else value


def conv(t, weight, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1, pad_type="not_set",
         available_memory_proportions=None, partials_types=None, enable_conv_dithering=None):
    """The convolution of t with weight (PopXL ops.conv; ONNX Conv, PyTorch F.conv1d /
    F.conv2d without bias): cross-correlation with zero padding.

    t: float32 (N, C, L) or (N, C, H, W) of the current graph. weight: float32 (M, C /
    groups, k) or (M, C / groups, kH, kW). stride, dilation: one int >= 1 per spatial axis
    (the defaults (1, 1) also serve a 1-D input). padding: ONNX's [x1_begin, x2_begin, ...,
    x1_end, x2_end], ints >= 0 (two for 1-D). groups: an int dividing C and M. pad_type:
    "not_set" (padding as given), "valid" (none), "same_upper" / "same_lower" (the padding
    giving ceil(size / stride) outputs, the odd one at the end / the beginning; with the
    dilated kernel's extent). Returns float32 (N, M, OL) or (N, M, OH, OW), OH = (H +
    pads - dilation (kH - 1) - 1) // stride + 1. available_memory_proportions,
    partials_types and enable_conv_dithering tune IPU tile planning: accepted and not read
    (a CPU has no tiles; the sum is accumulated in float32).

    Raises TypeError / ValueError (t or weight not a Tensor of the current graph; a bad
    pad_type), InvalidArgument (stride, padding or dilation of the wrong length or values;
    groups not an int), ShapeMismatch (weight's rank not t's, groups not dividing C and M,
    weight's dim 1 not C / groups), NotImplementedError (a 3-D input)."""
    check_in_graph(gcg(), t=t, weight=weight)
    if weight.rank != t.rank:
        raise ShapeMismatch(f"conv: weight {list(weight.shape)} must have t's rank {t.rank} (M, C / groups, "
                            "kernel...)")
    if isinstance(groups, bool) or not isinstance(groups, int):
        raise InvalidArgument(f"conv: groups must be an int, got {groups!r}")
    kernel, stride, pads, dilation = spatial_args(
        "conv", t, weight.shape[2:], _rank_default(stride, (1, 1)), _rank_default(padding, (0, 0, 0, 0)),
        _rank_default(dilation, (1, 1)), pad_type, kernel_name="weight's kernel")
    y = layers.conv2d(as_2d(t), as_2d(weight), None, stride, pads, dilation, groups)
    return from_2d(y, t.rank)
