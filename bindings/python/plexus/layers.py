"""plexus.layers: convolution, pooling and normalisation layers composed of the runtime's
ops (docs/ops.md: conv2d, max_pool2d, layer_norm, concat, split, matmul, where, ...), so
their gradients come from autodiff of those ops. poptorch's lowering of torch's modules and
popxl.ops' conv, max_pool, average_pool and group_norm both call these; each only converts
its framework's arguments.

Conventions: float32 tensors; images x [N, C, H, W] (the pooling functions also take any
leading dims [..., H, W] where noted); `pads` in ONNX's order [top, left, bottom, right]
(each spatial dim's begin, then its end), ints >= 0; `kernel`, `stride`, `dilation`
(height, width) pairs of ints >= 1. Shapes the runtime's ops reject raise their errors
(ShapeMismatch, DTypeMismatch, InvalidArgument); the layer rules these functions add
(groups, channels) raise ShapeMismatch naming the argument. Not thread-safe (the Ir is
not)."""
import numpy as _np

from plexus import dtypes as _dtypes, ops
from plexus.errors import ShapeMismatch as _ShapeMismatch
from plexus.variables import constant as _constant

_LOWEST = _np.finfo(_np.float32).min


def _const(array):
    return _constant(_np.asarray(array, _np.float32), _dtypes.float32)


def _split_pads(pads):
    """([top, left], [bottom, right]) of ONNX pads [top, left, bottom, right]."""
    return [int(p) for p in pads[:2]], [int(p) for p in pads[2:4]]


def dilated_kernel(weight, dilation):
    """The kernel weight [F, C, KH, KW] spread to [F, C, dh (KH - 1) + 1, dw (KW - 1) + 1]
    with zeros between its taps (a dilated convolution's kernel, as PyTorch's and ONNX's
    `dilations` define it): a matmul with a 0/1 matrix, so the gradient reaches the taps
    alone. dilation: (dh, dw) ints >= 1."""
    f, c, kh, kw = (int(d) for d in weight.shape)
    (dh, dw) = dilation
    kh2, kw2 = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    spread = _np.zeros((kh * kw, kh2 * kw2), _np.float32)
    for i in range(kh):
        for j in range(kw):
            spread[i * kw + j, i * dh * kw2 + j * dw] = 1.0
    taps = ops.matmul(ops.reshape(weight, shape=[f * c, kh * kw]), _const(spread))
    return ops.reshape(taps, shape=[f, c, kh2, kw2])


def padded(x, before, after, fill=0.0):
    """x [..., H, W] (float32, rank >= 2) with before[0] rows of `fill` on top, after[0]
    at the bottom, before[1] columns on the left and after[1] on the right (counts <= 0
    add nothing): constants concatenated, so the gradient flows back to x alone."""
    for axis, n_before, n_after in zip((-2, -1), before, after):
        def block(n):
            shape = list(x.shape)
            shape[axis] = n
            return [_const(_np.full(shape, fill, _np.float32))] if n > 0 else []
        parts = block(n_before) + [x] + block(n_after)
        x = ops.concat(*parts, axis=x.rank + axis) if len(parts) > 1 else x
    return x


def pool_output_size(size, extent, stride, before, after, ceil_mode):
    """The number of windows of `extent` (dilation (kernel - 1) + 1) at `stride` along a
    dim of `size` padded by `before` and `after`: floor((size + before + after - extent) /
    stride) + 1, or with ceil_mode the ceiling, less a last window that would start in the
    end padding (PyTorch's pooling rule, ONNX's since opset 19)."""
    span = size + before + after - extent
    if not ceil_mode:
        return span // stride + 1
    out = -(-span // stride) + 1
    return out - 1 if (out - 1) * stride >= size + before else out


def ceil_extension(x, extent, stride, pads):
    """[rows, columns] to append to x [..., H, W] beyond its end pads so that floor-mode
    windows give pool_output_size's ceil-mode count (the windows that run past the padded
    input read the fill); 0 where none is needed. extent: each window's (height, width)."""
    before, after = _split_pads(pads)
    extra = []
    for i in range(2):
        size = int(x.shape[-2 + i])
        out = pool_output_size(size, extent[i], stride[i], before[i], after[i], True)
        extra.append(max(0, (out - 1) * stride[i] + extent[i] - (size + before[i] + after[i])))
    return extra


def window_divisors(size, kernel, stride, before, after, ceil_mode, count_include_pad):
    """The average pool's divisor of each window along one dim (int numpy array of
    pool_output_size's length): the window clipped to the padded input with
    count_include_pad, else to the input alone (PyTorch's avg_pool2d, ONNX AveragePool's
    count_include_pad 1 / 0)."""
    out = pool_output_size(size, kernel, stride, before, after, ceil_mode)
    starts = _np.arange(out) * stride - before
    ends = _np.minimum(starts + kernel, size + after)
    if count_include_pad:
        return ends - starts
    return _np.minimum(ends, size) - _np.maximum(starts, 0)


def _tap_index(out, tap, stride, dilation, origin, width):
    """The int32 [OH, OW] flat indices, in a plane of `width` columns padded with `origin`
    rows and columns before, of window tap `tap` at each output position."""
    r = _np.arange(out[0])[:, None] * stride[0] + tap[0] * dilation[0] - origin[0]
    c = _np.arange(out[1])[None, :] * stride[1] + tap[1] * dilation[1] - origin[1]
    return _constant((r * width + c).astype(_np.int32), _dtypes.int32)


def windowed_max(x, kernel, stride, dilation, plane=None):
    """Max pooling of an already padded x [..., H, W] with dilated windows, no padding:
    [..., OH, OW], OH = (H - dh (KH - 1) - 1) // sh + 1. One strided slice of x per tap,
    folded pairwise in window order, keeping the earlier on a tie (PyTorch's first maximum,
    which gets the gradient). With `plane` = (the [top, left] padding x carries, the
    unpadded width), also the int32 flat index of each maximum in the unpadded plane
    (PyTorch's return_indices) as a second result."""
    out = [(int(x.shape[-2 + i]) - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(2)]
    best = index = None
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            rows = slice(i * dilation[0], i * dilation[0] + (out[0] - 1) * stride[0] + 1, stride[0])
            cols = slice(j * dilation[1], j * dilation[1] + (out[1] - 1) * stride[1] + 1, stride[1])
            tap = x[(slice(None),) * (x.rank - 2) + (rows, cols)]
            tap_index = None if plane is None else _tap_index(out, (i, j), stride, dilation, *plane)
            if best is None:
                best, index = tap, tap_index
                continue
            diff = ops.sub(best, tap)
            keep = ops.equal(ops.relu(diff), diff)
            best = ops.where(keep, best, tap)
            if plane is not None:
                index = ops.where(keep, index, tap_index)
    return best if plane is None else (best, index)


def _check_groups(x, weight, bias, groups):
    """ShapeMismatch naming the argument unless x [N, C, H, W], weight [F, C / groups, KH,
    KW] with groups dividing C and F, and bias None or [F]."""
    if x.rank != 4 or weight.rank != 4:
        raise _ShapeMismatch(f"conv2d: x {list(x.shape)} and weight {list(weight.shape)} must both have rank 4")
    c, f = int(x.shape[1]), int(weight.shape[0])
    if groups < 1 or c % groups or f % groups:
        raise _ShapeMismatch(f"conv2d: groups={groups} must divide the {c} channels of x and the {f} filters "
                             "of weight")
    if int(weight.shape[1]) != c // groups:
        raise _ShapeMismatch(f"conv2d: weight {list(weight.shape)} must have C / groups = {c // groups} "
                             f"channels (dim 1) for x {list(x.shape)}")
    if bias is not None and list(bias.shape) != [f]:
        raise _ShapeMismatch(f"conv2d: bias {list(bias.shape)} must be [{f}] (one per filter of weight)")


def conv2d(x, weight, bias=None, stride=(1, 1), pads=(0, 0, 0, 0), dilation=(1, 1), groups=1):
    """The cross-correlation of x [N, C, H, W] with weight [F, C / groups, KH, KW] plus
    bias [F] (None: none): [N, F, OH, OW], OH = (H + top + bottom - dh (KH - 1) - 1) // sh
    + 1 (PyTorch's F.conv2d, ONNX Conv; zero padding). Asymmetric pads add zero rows and
    columns to x for the part beyond the smaller side (padded); dilation spreads the kernel
    (dilated_kernel); groups convolve each group's channels with its filters and
    concatenate (PyTorch's definition). Raises ShapeMismatch (_check_groups)."""
    _check_groups(x, weight, bias, groups)
    before, after = _split_pads(pads)
    common = [min(b, a) for b, a in zip(before, after)]
    x = padded(x, [b - s for b, s in zip(before, common)], [a - s for a, s in zip(after, common)], 0.0)
    if list(dilation) != [1, 1]:
        weight = dilated_kernel(weight, dilation)
    biases = [bias] if bias is not None else []
    attrs = dict(stride=[int(s) for s in stride], padding=common)
    if groups == 1:
        return ops.conv2d(x, weight, *biases, **attrs)
    c, f = int(x.shape[1]), int(weight.shape[0])
    parts = zip(ops.split(x, sizes=[c // groups] * groups, axis=1),
                ops.split(weight, sizes=[f // groups] * groups, axis=0),
                *([ops.split(bias, sizes=[f // groups] * groups)] if biases else []))
    return ops.concat(*(ops.conv2d(*part, **attrs) for part in parts), axis=1)


def max_pool2d(x, kernel, stride, pads=(0, 0, 0, 0), dilation=(1, 1), ceil_mode=False, return_indices=False):
    """The maximum of each window of x [N, C, H, W] ([..., H, W] with dilation or
    return_indices), padding excluded: [N, C, OH, OW] of pool_output_size (PyTorch's
    MaxPool2d, ONNX MaxPool). The runtime's max_pool2d when it can (no dilation, no
    indices, the smaller pad of each dim at most half the kernel; the rest of the padding
    and ceil_mode's extension added as the lowest float32), else windowed_max of x padded
    with the lowest float32. return_indices: (output, int32 flat index of each maximum in
    its input plane), as PyTorch's."""
    kernel, stride, dilation = [int(k) for k in kernel], [int(s) for s in stride], [int(d) for d in dilation]
    before, after = _split_pads(pads)
    extent = [d * (k - 1) + 1 for d, k in zip(dilation, kernel)]
    extra = ceil_extension(x, extent, stride, pads) if ceil_mode else [0, 0]
    common = [min(b, a) for b, a in zip(before, after)]
    if dilation == [1, 1] and not return_indices and all(s <= k // 2 for s, k in zip(common, kernel)):
        x = padded(x, [b - s for b, s in zip(before, common)],
                   [a - s + e for a, s, e in zip(after, common, extra)], _LOWEST)
        return ops.max_pool2d(x, kernel=kernel, stride=stride, padding=common)
    framed = padded(x, before, [a + e for a, e in zip(after, extra)], _LOWEST)
    plane = (before, int(x.shape[-1])) if return_indices else None
    return windowed_max(framed, kernel, stride, dilation, plane)


def _per_plane(x, fn):
    """fn(x as [L, 1, H, W], L the product of x's leading dims) -> [L, 1, OH, OW], back to
    [leading..., OH, OW]."""
    lead = list(x.shape[:-2])
    y = fn(ops.reshape(x, shape=[int(_np.prod(lead))] + [1] + list(x.shape[-2:])))
    return ops.reshape(y, shape=lead + list(y.shape[-2:]))


def average_pool2d(x, kernel, stride, pads=(0, 0, 0, 0), ceil_mode=False, count_include_pad=False,
                   divisor_override=None):
    """The mean of each window of x [..., H, W]: [..., OH, OW] of pool_output_size. The
    window sums are a convolution with a kernel of ones (per plane); each is divided by
    divisor_override when given, else by window_divisors (PyTorch's avg_pool2d; ONNX
    AveragePool, whose count_include_pad 0 is PopXL's). Asymmetric pads and ceil_mode's
    extension add zeros to x."""
    kernel, stride = [int(k) for k in kernel], [int(s) for s in stride]
    before, after = _split_pads(pads)
    sizes = [int(d) for d in x.shape[-2:]]  # the divisors are of the input, not its extension
    extra = ceil_extension(x, kernel, stride, pads) if ceil_mode else [0, 0]
    common = [min(b, a) for b, a in zip(before, after)]
    x = padded(x, [b - s for b, s in zip(before, common)], [a - s + e for a, s, e in zip(after, common, extra)], 0.0)
    ones = _const(_np.ones((1, 1) + tuple(kernel)))
    y = _per_plane(x, lambda t: ops.conv2d(t, ones, stride=stride, padding=common))
    if divisor_override is not None:
        return ops.mul(y, 1.0 / divisor_override)
    counts = _np.outer(*(window_divisors(sizes[i], kernel[i], stride[i], before[i], after[i], ceil_mode,
                                         count_include_pad) for i in range(2)))
    if (counts == kernel[0] * kernel[1]).all():
        return ops.mul(y, 1.0 / (kernel[0] * kernel[1]))
    return ops.div(y, _const(counts))


def layer_norm_last(x, eps, weight=None, bias=None):
    """(x - mean) / sqrt(var + eps) over x's last dim (biased variance), times weight and
    plus bias ([x.shape[-1]] each, None: none): the runtime's layer_norm, a weight without
    a bias (or the reverse) applied after it (PyTorch's F.layer_norm)."""
    if weight is not None and bias is not None:
        return ops.layer_norm(x, weight, bias, eps=float(eps))
    y = ops.layer_norm(x, eps=float(eps))
    y = y if weight is None else ops.mul(y, weight)
    return y if bias is None else ops.add(y, bias)


def per_channel(t, rank):
    """A [C] tensor shaped [1, C, 1, ...] to broadcast along dim 1 of a rank-`rank` input."""
    return ops.reshape(t, shape=[1, int(t.shape[0])] + [1] * (rank - 2))


def channel_affine(y, weight=None, bias=None):
    """y [N, C, ...] times weight [C] and plus bias [C] along dim 1 (None: skipped)."""
    if weight is not None:
        y = ops.mul(y, per_channel(weight, y.rank))
    if bias is not None:
        y = ops.add(y, per_channel(bias, y.rank))
    return y


def group_norm(x, num_groups, eps=1e-5, weight=None, bias=None):
    """Group normalisation of x [N, C, ...] (rank >= 2): each sample's num_groups groups of
    C / num_groups consecutive channels normalised together over their channels and
    positions (layer_norm_last of the group's flattened values, biased variance, eps inside
    the square root), then channel_affine with weight [C] and bias [C] (Wu and He 2018;
    PyTorch's F.group_norm, PopXL's ops.group_norm). Raises ShapeMismatch naming x,
    num_groups, weight or bias."""
    if x.rank < 2:
        raise _ShapeMismatch(f"group_norm: x {list(x.shape)} must be [N, C, ...] (rank >= 2)")
    c = int(x.shape[1])
    if num_groups < 1 or c % num_groups:
        raise _ShapeMismatch(f"group_norm: num_groups={num_groups} must divide the {c} channels of x")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and list(t.shape) != [c]:
            raise _ShapeMismatch(f"group_norm: {name} {list(t.shape)} must be [{c}] (one per channel of x)")
    groups = ops.reshape(x, shape=[int(x.shape[0]), int(num_groups), -1])
    return channel_affine(ops.reshape(layer_norm_last(groups, eps), shape=list(x.shape)), weight, bias)
