"""popxl.ops.pool: PopXL's max_pool and average_pool (ONNX MaxPool / AveragePool
conventions), plexus.layers.max_pool2d and average_pool2d with PopXL's arguments."""
from plexus import layers
from plexus.graph import gcg
from popxl.ops.utils import as_2d, check_in_graph, from_2d, spatial_args, unused_or

STORAGE_ORDERS = ("row", "column")


def _pool_args(op, t, kernel_size, stride, padding, out_pads, dilation, in_dilations, auto_pad):
    """(kernel, stride, pads, dilation) as 2-D lists after PopXL's checks (utils)."""
    check_in_graph(gcg(), t=t)
    unused_or(op, "out_pads", out_pads, 0)
    unused_or(op, "in_dilations", in_dilations, 1)
    return spatial_args(op, t, kernel_size, stride, padding, dilation, auto_pad)


def max_pool(t, kernel_size, stride=None, padding=None, out_pads=None, dilation=None, in_dilations=None,
             auto_pad="not_set", ceil_mode=False, storage_order="row"):
    """The maximum of each window of t (PopXL ops.max_pool; ONNX MaxPool, PyTorch
    F.max_pool1d / max_pool2d), padding never winning.

    t: float32 (N, C, L) or (N, C, H, W) of the current graph. kernel_size: one int >= 1
    per spatial axis. stride: one int >= 1 per axis, None: 1 (PopXL's default, not
    PyTorch's kernel_size). padding: ONNX's [x1_begin, x2_begin, ..., x1_end, x2_end],
    None: zeros. dilation: one int >= 1 per axis, None: 1. auto_pad: as conv's pad_type.
    ceil_mode: the output size rounded up, a last window starting in the end padding
    dropped (PyTorch's rule; plexus.layers.pool_output_size). out_pads must be None or
    zeros and in_dilations None or ones (NotImplementedError otherwise). storage_order
    ("row" or "column") orders ONNX MaxPool's argmax indices output, which PopXL's
    max_pool does not return, so it does not change the result. Returns float32 (N, C,
    OL) or (N, C, OH, OW).

    Raises TypeError / ValueError (t not a Tensor of the current graph; a bad auto_pad or
    storage_order), InvalidArgument (a list of the wrong length or values),
    NotImplementedError (a 3-D input, out_pads, in_dilations), ShapeMismatch."""
    if storage_order not in STORAGE_ORDERS:
        raise ValueError(f"max_pool: storage_order must be 'row' or 'column', got {storage_order!r}")
    kernel, stride, pads, dilation = _pool_args("max_pool", t, kernel_size, stride, padding, out_pads, dilation,
                                                in_dilations, auto_pad)
    return from_2d(layers.max_pool2d(as_2d(t), kernel, stride, pads, dilation, bool(ceil_mode)), t.rank)


def average_pool(t, kernel_size, stride=None, padding=None, out_pads=None, dilation=None, in_dilations=None,
                 auto_pad="not_set", ceil_mode=False):
    """The mean of each window of t (PopXL ops.average_pool; ONNX AveragePool with
    count_include_pad 0, PyTorch F.avg_pool2d with count_include_pad=False): each window's
    sum over the number of its positions inside t, padding excluded.

    Arguments as max_pool's; dilation must be None or ones (NotImplementedError
    otherwise: ONNX AveragePool before opset 19 has none, nor has PyTorch's). Returns
    float32 (N, C, OL) or (N, C, OH, OW). Raises as max_pool."""
    unused_or("average_pool", "dilation", dilation, 1)
    kernel, stride, pads, _ = _pool_args("average_pool", t, kernel_size, stride, padding, out_pads, None,
                                         in_dilations, auto_pad)
    return from_2d(layers.average_pool2d(as_2d(t), kernel, stride, pads, bool(ceil_mode), False), t.rank)
