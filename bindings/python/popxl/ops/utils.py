"""popxl.ops.utils: the argument checks of popxl.ops' layer ops (PopXL's ops.utils):
tensors of the current graph, and the receptive-field arguments of conv, max_pool and
average_pool (kernel, stride, padding, dilation, auto_pad) converted to plexus.layers'
2-D forms, a 1-D input (N, C, L) being a 2-D one with H = 1."""
import numbers

from plexus import ops
from plexus.errors import InvalidArgument, ShapeMismatch
from plexus.tensor import Tensor, tensors_of_graph

PAD_TYPES = ("not_set", "same_upper", "same_lower", "valid")


def check_in_graph(graph, **tensors):
    """Each keyword's value is a Tensor of `graph` (PopXL's check_in_graph): TypeError
    naming the argument for another value, ValueError for a tensor of another graph."""
    for name, t in tensors.items():
        if not isinstance(t, Tensor):
            raise TypeError(f"argument `{name}` must be a popxl Tensor, got {type(t).__name__} {t!r:.80}")
        if t.ir is not graph.ir or all(tid != t.id for tid, _, _ in tensors_of_graph(graph.ir, graph.id)):
            raise ValueError(f"argument `{name}` ({t.name or t.id}) is not a tensor of the current graph "
                             f"'{graph.name}'")


def ints(op, name, value, length, minimum):
    """`value` as a list of `length` ints >= minimum, else InvalidArgument naming `name`."""
    values = list(value) if isinstance(value, (list, tuple)) else None
    if (values is None or len(values) != length
            or any(isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < minimum for v in values)):
        raise InvalidArgument(f"{op}: {name} must be {length} int(s) >= {minimum}, got {value!r}")
    return [int(v) for v in values]


def _same_pads(pad_type, sizes, extents, stride):
    """ONNX's auto_pad "same_*": the total padding giving ceil(size / stride) outputs, the
    odd one at the end ("same_upper") or at the beginning ("same_lower")."""
    before, after = [], []
    for size, extent, s in zip(sizes, extents, stride):
        total = max(0, (-(-size // s) - 1) * s + extent - size)
        low = total // 2 if pad_type == "same_upper" else total - total // 2
        before.append(low)
        after.append(total - low)
    return before + after


def spatial_args(op, t, kernel, stride, padding, dilation, pad_type, kernel_name="kernel_size"):
    """(kernel, stride, pads, dilation) of a 1-D or 2-D op on t, as 2-D lists for
    plexus.layers (pads ONNX's [top, left, bottom, right]). stride / dilation None: ones;
    padding None: zeros; the pad_type's padding replaces `padding` unless "not_set".
    Raises NotImplementedError (a 3-D input), ShapeMismatch (another rank), ValueError (a
    pad_type not in PAD_TYPES), InvalidArgument (a list of the wrong length or values)."""
    if t.rank == 5:
        raise NotImplementedError(f"{op}: t {list(t.shape)} is a 3-D input (N, C, D, H, W); 1-D (N, C, L) and "
                                  "2-D (N, C, H, W) inputs are supported")
    if t.rank not in (3, 4):
        raise ShapeMismatch(f"{op}: t {list(t.shape)} must be (N, C, L) or (N, C, H, W)")
    if pad_type not in PAD_TYPES:
        raise ValueError(f"{op}: pad type {pad_type!r} must be one of {', '.join(PAD_TYPES)}")
    n = t.rank - 2
    kernel = ints(op, kernel_name, kernel, n, 1)
    stride = [1] * n if stride is None else ints(op, "stride", stride, n, 1)
    dilation = [1] * n if dilation is None else ints(op, "dilation", dilation, n, 1)
    pads = [0] * 2 * n if padding is None else ints(op, "padding", padding, 2 * n, 0)
    if pad_type == "valid":
        pads = [0] * 2 * n
    elif pad_type != "not_set":
        extents = [d * (k - 1) + 1 for d, k in zip(dilation, kernel)]
        pads = _same_pads(pad_type, [int(s) for s in t.shape[2:]], extents, stride)
    if n == 1:
        return [1] + kernel, [1] + stride, [0, pads[0], 0, pads[1]], [1] + dilation
    return kernel, stride, pads, dilation


def as_2d(t):
    """t (N, C, L) as (N, C, 1, L); a rank-4 t as it is."""
    return ops.reshape(t, shape=[int(t.shape[0]), int(t.shape[1]), 1, int(t.shape[2])]) if t.rank == 3 else t


def from_2d(y, rank):
    """A 2-D op's output (N, C, 1, L) back to (N, C, L) for a rank-3 input."""
    return ops.reshape(y, shape=[int(y.shape[0]), int(y.shape[1]), int(y.shape[3])]) if rank == 3 else y


def unused_or(op, name, value, neutral):
    """NotImplementedError naming `name` unless `value` is None or all `neutral` (an
    argument whose other values the CPU runtime does not implement)."""
    if value is not None and any(v != neutral for v in value):
        raise NotImplementedError(f"{op}: {name}={value!r} is not supported (only None or all {neutral})")

