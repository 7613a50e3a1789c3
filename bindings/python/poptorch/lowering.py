"""The torch operations a captured model may use, each lowered to Plexus ops (docs/ops.md):
torch.nn modules by type, functions (torch.*, torch.nn.functional.*, operator.*) by
object, and tensor methods by name. Each lowering takes the Plexus Tensors (or Python
values) of the node's arguments and returns a Tensor or a tuple; the gradients come from
Plexus's autodiff of the ops used. What is lowered, and where it differs from torch, is in
docs/python.md ("import poptorch")."""
import operator

import numpy as np
import torch
import torch.nn.functional as F

import plexus
from plexus import layers, ops


class Unsupported(Exception):
    """A module, function or argument value with no lowering (capture.py adds where)."""


def _axis(dim, rank):
    return dim + rank if dim < 0 else dim


def _pair(v):
    return [int(v), int(v)] if isinstance(v, int) else [int(x) for x in v]


def _reshape(x, shape):
    shape = [int(s) for s in (shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape)]
    return ops.reshape(x, shape=shape)


def _flatten(x, start_dim=0, end_dim=-1):
    s, e = _axis(start_dim, x.rank), _axis(end_dim, x.rank)
    shape = list(x.shape)
    return ops.reshape(x, shape=shape[:s] + [int(np.prod(shape[s:e + 1]))] + shape[e + 1:])


def linear(x, weight, bias=None):
    """x @ weight^T + bias: torch's weight [out, in]."""
    y = ops.matmul(x, weight, transpose_b=1)
    return y if bias is None else ops.add(y, bias)


def _conv_pads(m):
    """(before, after) per spatial dim of a Conv2d: its numbers, 0 for "valid"; for "same",
    dilation (kernel - 1) in all, the odd one after (torch's split)."""
    if not isinstance(m.padding, str):
        return _pair(m.padding), _pair(m.padding)
    if m.padding == "valid":
        return [0, 0], [0, 0]
    total = [d * (k - 1) for d, k in zip(_pair(m.dilation), _pair(m.kernel_size))]
    return [t // 2 for t in total], [t - t // 2 for t in total]


def _rows(x, axis, start, stop, step=1):
    key = [slice(None)] * x.rank
    key[axis] = slice(start, stop, step)
    return x[tuple(key)]


def _edge_padded(x, mode, before, after):
    """x [..., H, W] padded by before[i] / after[i] along its last two dims with torch's
    padding_mode "reflect" (mirrored, edge excluded), "replicate" (the edge repeated) or
    "circular" (wrapped around): slices of x concatenated, so the gradient flows back."""
    for axis, b, a in zip((x.rank - 2, x.rank - 1), before, after):
        size = int(x.shape[axis])
        if mode == "circular":
            head, tail = (size - b, size, 1), (0, a, 1)
        elif mode == "replicate":
            head, tail = (0, 1, 1), (size - 1, size, 1)
        else:  # reflect
            head, tail = (b, 0, -1), (size - 2, size - 2 - a if size - 2 - a >= 0 else None, -1)
        copies = (b, a) if mode == "replicate" else (1, 1)  # replicate repeats its edge row
        parts = ([_rows(x, axis, *head)] * copies[0] if b else []) + [x] + \
            ([_rows(x, axis, *tail)] * copies[1] if a else [])
        x = ops.concat(*parts, axis=axis) if len(parts) > 1 else x
    return x


def _conv2d(m, ctx, x):
    """Conv2d: plexus.layers.conv2d (dilation, groups, the odd "same" padding after); a
    padding_mode other than zeros pads x first (_edge_padded), as torch does."""
    before, after = _conv_pads(m)
    if m.padding_mode != "zeros":
        x, before, after = _edge_padded(x, m.padding_mode, before, after), [0, 0], [0, 0]
    bias = ctx.param(m.bias) if m.bias is not None else None
    return layers.conv2d(x, ctx.param(m.weight), bias, stride=_pair(m.stride), pads=before + after,
                         dilation=_pair(m.dilation), groups=m.groups)


def _max_pool2d(m, ctx, x):
    """MaxPool2d: plexus.layers.max_pool2d (ceil_mode, dilation; return_indices: the output
    and the int32 flat index of each maximum in its input plane, as torch's)."""
    pad = _pair(m.padding)
    return layers.max_pool2d(x, _pair(m.kernel_size), _pair(m.stride or m.kernel_size), pad + pad,
                             _pair(m.dilation), m.ceil_mode, m.return_indices)


def _per_position(x, target, reduction, loss):
    """loss(rows [M, C], targets [M]) of torch's class losses, whose input is [N, C] or
    [N, C, d1, ...] with targets [N, d1, ...]: the classes moved last and the positions
    flattened (M = N d1 ...); reduction "none" comes back in the targets' shape."""
    if x.rank < 2:
        raise Unsupported(f"a class loss of an input of rank {x.rank}: [N, C] or [N, C, d1, ...]")
    if x.rank == 2:
        return loss(x, target)
    rows = ops.reshape(ops.transpose(x, perm=[0] + list(range(2, x.rank)) + [1]), shape=[-1, int(x.shape[1])])
    result = loss(rows, ops.reshape(target, shape=[-1]))
    return ops.reshape(result, shape=list(target.shape)) if reduction == "none" else result


def _cross_entropy(logits, labels, reduction="mean", ignore_index=-100, label_smoothing=0.0, weight=None):
    """torch's cross entropy: softmax_cross_entropy for the plain mean over [N, C], else
    log_softmax and _class_nll (class weights, label smoothing, "sum" and "none")."""
    def loss(rows, targets):
        if reduction == "mean" and label_smoothing == 0.0 and weight is None:
            return ops.softmax_cross_entropy(rows, ops.cast(targets, plexus.int32), ignore_index=int(ignore_index))
        return _class_nll(ops.log_softmax(rows, axis=1), targets, weight, ignore_index, reduction, label_smoothing)
    return _per_position(logits, labels, reduction, loss)


def _mse(a, b, reduction="mean"):
    d = ops.sub(a, b)
    return _reduce(ops.mul(d, d), reduction)


def _l1(a, b, reduction="mean"):
    return _reduce(_abs(ops.sub(a, b)), reduction)


def _reduce(x, reduction):
    if reduction == "mean":
        return ops.reduce_mean(x)
    if reduction == "sum":
        return ops.reduce_sum(x)
    if reduction == "none":
        return x
    raise Unsupported(f"reduction={reduction!r} (mean, sum or none)")


def _sigmoid(x):
    return ops.div(1.0, ops.add(ops.exp(ops.neg(x)), 1.0))


def _dropout(ctx, x, p):
    return ops.dropout(x, p=float(p), seed=ctx.seed) if ctx.training and p > 0 else x


def _abs(x):
    return ops.where(ops.equal(ops.relu(x), x), x, ops.neg(x))


def _const(array):
    return plexus.constant(np.asarray(array, np.float32), plexus.float32)


def _avg_pool2d(m, ctx, x):
    """AvgPool2d: plexus.layers.average_pool2d with torch's divisors."""
    if x.rank not in (3, 4):
        raise Unsupported(f"AvgPool2d of an input of rank {x.rank}: only [N,]C,H,W")
    pad = _pair(m.padding)
    return layers.average_pool2d(x, _pair(m.kernel_size), _pair(m.stride or m.kernel_size), pad + pad, m.ceil_mode,
                                 m.count_include_pad, m.divisor_override)


def _adaptive_avg_pool2d(m, ctx, x):
    h, w = (int(d) for d in x.shape[-2:])
    size = m.output_size
    oh, ow = (size, size) if isinstance(size, int) else size
    oh, ow = oh or h, ow or w  # None keeps the input's size
    if x.rank not in (3, 4) or h % oh or w % ow:
        raise Unsupported(f"AdaptiveAvgPool2d to {m.output_size} from {h}x{w}: only output sizes that divide "
                          "the input's are lowered")
    lead = list(x.shape[:-2])
    windows = ops.reshape(x, shape=lead + [oh, h // oh, ow, w // ow])
    return ops.reduce_mean(windows, axes=[len(lead) + 1, len(lead) + 3])


def _row_norms(weight, norm_type):
    """The norm_type-norm of each row of weight [V, D] as [V, 1] (torch's Tensor.norm: 2 and
    1 directly, inf the largest |w|, another p as (sum |w|^p)^(1/p) through exp and log)."""
    if norm_type == 2:
        return ops.sqrt(ops.reduce_sum(ops.mul(weight, weight), axes=[1], keepdims=1))
    magnitude = _abs(weight)
    if norm_type == 1:
        return ops.reduce_sum(magnitude, axes=[1], keepdims=1)
    if norm_type == float("inf"):
        return _max(magnitude, 1, keepdim=True)[0]
    if norm_type <= 0:
        raise Unsupported(f"Embedding with norm_type={norm_type} (a norm needs p > 0)")
    powers = ops.exp(ops.mul(ops.log(magnitude), float(norm_type)))
    return ops.exp(ops.div(ops.log(ops.reduce_sum(powers, axes=[1], keepdims=1)), float(norm_type)))


def _renormalise(weight, indices, max_norm, norm_type):
    """torch's embedding_renorm_ in the forward: each row of the variable weight [V, D]
    that `indices` reads (once, however often it is read) and whose norm exceeds max_norm
    is scaled in place by max_norm / (norm + 1e-7); the other rows are multiplied by 1.
    copy_var_update_ has no gradient, as torch renormalises under no_grad."""
    flat = ops.reshape(indices, shape=[-1])
    ones = _const(np.ones((int(flat.shape[0]), 1)))
    reads = ops.gather_grad(flat, ones, num_rows=int(weight.shape[0]))  # [V, 1]: times each row is read
    norms = _row_norms(weight, norm_type)
    over = ops.mul(ops.relu(ops.sub(norms, float(max_norm))), reads)  # > 0 where read and norm > max_norm
    scale = ops.where(ops.equal(over, ops.constant_like(over, 0.0)), ops.constant_like(norms, 1.0),
                      ops.div(float(max_norm), ops.add(norms, 1e-7)))
    ops.copy_var_update_(weight, ops.mul(weight, scale))


def _embedding(indices, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
               sparse=False):
    """F.embedding: rows of the weight variable; the rows read at padding_idx come from the
    weight detached, so the padding row gets no gradient (torch's padding_idx). With
    max_norm the rows read are renormalised in the weight first (_renormalise); the gather
    then reads the updated variable (ops run in program order), and its gradient, dy's rows
    scattered, does not involve the scale, as torch's. sparse gradients are dense here (the
    same values)."""
    if scale_grad_by_freq:
        raise Unsupported("Embedding with scale_grad_by_freq")
    indices = ops.cast(indices, plexus.int32)
    if max_norm is not None:
        _renormalise(weight, indices, max_norm, float(norm_type))
    rows = ops.gather(weight, indices)
    if padding_idx is None:
        return rows
    padding = ops.equal(ops.reshape(indices, shape=list(indices.shape) + [1]),
                        ops.constant_like(indices, int(padding_idx) % int(weight.shape[0])))
    return ops.where(padding, ops.gather(ops.detach(weight), indices), rows)


def _tensor(value):
    """A loss's weight argument as a Plexus Tensor: a torch tensor becomes a float32 constant."""
    if isinstance(value, torch.Tensor):
        return _const(value.detach().cpu().numpy())
    return value


def _nll(logp, target, weight=None, ignore_index=-100, reduction="mean"):
    return _per_position(logp, target, reduction,
                         lambda rows, targets: _class_nll(rows, targets, weight, ignore_index, reduction))


def _class_nll(logp, target, weight, ignore_index, reduction, smoothing=0.0):
    """torch's nll_loss of logp [N, C] with class weights w (ones when None), and
    cross_entropy's label smoothing e: per sample, (1 - e) w[y] (-logp[y]) + e / C
    sum_c w[c] (-logp[c]), 0 where y is ignore_index; "mean" divides the sum by sum w[y] of
    the samples kept."""
    n_classes = int(logp.shape[1])
    target = ops.cast(target, plexus.int32)
    classes = plexus.constant(np.arange(n_classes, dtype=np.int32).reshape(1, -1), plexus.int32)
    onehot = ops.cast(ops.equal(ops.reshape(target, shape=[-1, 1]), classes), plexus.float32)
    keep = ops.sub(1.0, ops.cast(ops.equal(target, ops.constant_like(target, int(ignore_index))), plexus.float32))
    w = None if weight is None else ops.reshape(_tensor(weight), shape=[1, n_classes])
    weighted = onehot if w is None else ops.mul(onehot, w)
    kept_weight = ops.mul(ops.reduce_sum(weighted, axes=[1]), keep)  # w[y], 0 where ignored
    loss = ops.neg(ops.mul(ops.reduce_sum(ops.mul(logp, weighted), axes=[1]), keep))
    if smoothing:
        spread = logp if w is None else ops.mul(logp, w)
        smooth = ops.neg(ops.mul(ops.reduce_sum(spread, axes=[1]), keep))
        loss = ops.add(ops.mul(loss, 1.0 - smoothing), ops.mul(smooth, smoothing / n_classes))
    if reduction == "mean":
        return ops.div(ops.reduce_sum(loss), ops.reduce_sum(kept_weight))
    return _reduce(loss, reduction)


def _log1p_exp_neg_abs(x):
    """log(1 + exp(-|x|)): never overflows."""
    return ops.log(ops.add(ops.exp(ops.neg(_abs(x))), 1.0))


def _softplus(x):
    """log(1 + exp(x)) without overflow: relu(x) + log(1 + exp(-|x|))."""
    return ops.add(ops.relu(x), _log1p_exp_neg_abs(x))


def _bce_with_logits(x, y, weight=None, pos_weight=None, reduction="mean"):
    """torch's -w [p y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))], w the weight
    (broadcast to x), p the pos_weight (broadcast along the last dim), both 1 when None."""
    if pos_weight is None:
        # max(x, 0) - x y + log(1 + exp(-|x|)): no overflow
        loss = ops.add(ops.sub(ops.relu(x), ops.mul(x, y)), _log1p_exp_neg_abs(x))
    else:  # (1 - y) x + (1 + (p - 1) y) softplus(-x)
        scale = ops.add(ops.mul(ops.sub(_tensor(pos_weight), 1.0), y), 1.0)
        loss = ops.add(ops.mul(ops.sub(1.0, y), x), ops.mul(scale, _softplus(ops.neg(x))))
    if weight is not None:
        loss = ops.mul(loss, _tensor(weight))
    return _reduce(loss, reduction)


def _argmax(x, dim=None, keepdim=False):
    if dim is None:
        return ops.argmax(ops.reshape(x, shape=[-1]), axis=0)
    return ops.argmax(x, axis=_axis(dim, x.rank), keepdims=int(keepdim))


def _max(x, dim=None, keepdim=False):
    """torch.max(x) (the largest value) or torch.max(x, dim) (values, indices); the gradient
    goes to the first maximum, as torch's."""
    if not isinstance(dim, int):
        if dim is not None:
            raise Unsupported("torch.max of two tensors (elementwise)")
        return _max(ops.reshape(x, shape=[-1]), 0)[0]
    axis = _axis(dim, x.rank)
    index = ops.argmax(x, axis=axis, keepdims=1)
    classes = np.arange(int(x.shape[axis]), dtype=np.int32).reshape([-1] + [1] * (x.rank - axis - 1))
    hit = ops.cast(ops.equal(index, plexus.constant(classes, plexus.int32)), plexus.float32)
    values = ops.reduce_sum(ops.mul(x, hit), axes=[axis], keepdims=int(keepdim))
    return values, (index if keepdim else ops.reshape(index, shape=list(values.shape)))


MODULES = {
    torch.nn.Linear: lambda m, ctx, x: linear(x, ctx.param(m.weight),
                                              ctx.param(m.bias) if m.bias is not None else None),
    torch.nn.Conv2d: _conv2d,
    torch.nn.MaxPool2d: _max_pool2d,
    torch.nn.ReLU: lambda m, ctx, x: ops.relu(x),
    torch.nn.Tanh: lambda m, ctx, x: ops.tanh(x),
    torch.nn.Sigmoid: lambda m, ctx, x: _sigmoid(x),
    torch.nn.GELU: lambda m, ctx, x: ops.gelu(x),
    torch.nn.Softmax: lambda m, ctx, x: ops.softmax(x, axis=m.dim if m.dim is not None else -1),
    torch.nn.LogSoftmax: lambda m, ctx, x: ops.log_softmax(x, axis=m.dim if m.dim is not None else -1),
    torch.nn.Flatten: lambda m, ctx, x: _flatten(x, m.start_dim, m.end_dim),
    torch.nn.Dropout: lambda m, ctx, x: _dropout(ctx, x, m.p if m.training else 0.0),  # eval(): identity
    torch.nn.Identity: lambda m, ctx, x: x,
    torch.nn.CrossEntropyLoss: lambda m, ctx, a, b: _cross_entropy(a, b, m.reduction, m.ignore_index,
                                                                   m.label_smoothing, m.weight),
    torch.nn.MSELoss: lambda m, ctx, a, b: _mse(a, b, m.reduction),
    torch.nn.L1Loss: lambda m, ctx, a, b: _l1(a, b, m.reduction),
    torch.nn.AvgPool2d: _avg_pool2d,
    torch.nn.AdaptiveAvgPool2d: _adaptive_avg_pool2d,
    torch.nn.Embedding: lambda m, ctx, x: _embedding(x, ctx.param(m.weight), m.padding_idx, m.max_norm, m.norm_type,
                                                     m.scale_grad_by_freq, m.sparse),
    torch.nn.NLLLoss: lambda m, ctx, a, b: _nll(a, b, m.weight, m.ignore_index, m.reduction),
    torch.nn.BCEWithLogitsLoss: lambda m, ctx, a, b: _bce_with_logits(a, b, m.weight, m.pos_weight, m.reduction),
}

FUNCTIONS = {
    torch.fx._symbolic_trace._assert_is_none: lambda value, message: None,  # fx's check of a concrete None
    operator.add: ops.add, torch.add: ops.add, operator.sub: ops.sub, torch.sub: ops.sub,
    operator.mul: ops.mul, torch.mul: ops.mul, operator.truediv: ops.div, torch.div: ops.div,
    operator.neg: ops.neg, operator.matmul: ops.matmul, torch.matmul: ops.matmul,
    operator.getitem: lambda x, key: x[key],
    F.linear: linear,  # a bare nn.Linear as the model: fx traces its forward, F.linear
    torch.flatten: _flatten, torch.relu: ops.relu, F.relu: lambda x, inplace=False: ops.relu(x),
    torch.tanh: ops.tanh, torch.sigmoid: _sigmoid, torch.exp: ops.exp, torch.log: ops.log, torch.sqrt: ops.sqrt,
    F.gelu: lambda x, approximate="none": ops.gelu(x),
    F.softmax: lambda x, dim=-1, **_: ops.softmax(x, axis=dim),
    F.log_softmax: lambda x, dim=-1, **_: ops.log_softmax(x, axis=dim),
    F.cross_entropy: lambda a, b, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
    label_smoothing=0.0: _cross_entropy(a, b, reduction, ignore_index, label_smoothing, weight),
    F.mse_loss: lambda a, b, size_average=None, reduce=None, reduction="mean": _mse(a, b, reduction),
    torch.cat: lambda tensors, dim=0: ops.concat(*tensors, axis=dim),
    torch.mean: lambda x, dim=None, keepdim=False: _reduce_dims(ops.reduce_mean, x, dim, keepdim),
    torch.sum: lambda x, dim=None, keepdim=False: _reduce_dims(ops.reduce_sum, x, dim, keepdim),
    torch.max: _max, torch.argmax: _argmax, F.embedding: _embedding,
    F.nll_loss: lambda a, b, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean":
    _nll(a, b, weight, ignore_index, reduction),
    F.binary_cross_entropy_with_logits: lambda a, b, weight=None, size_average=None, reduce=None, reduction="mean",
    pos_weight=None: _bce_with_logits(a, b, weight, pos_weight, reduction),
}


def _reduce_dims(op, x, dim=None, keepdim=False):
    axes = [] if dim is None else [_axis(d, x.rank) for d in ((dim,) if isinstance(dim, int) else dim)]
    return op(x, axes=axes, keepdims=int(keepdim))


def _transpose(x, dim0, dim1):
    perm = list(range(x.rank))
    a, b = _axis(dim0, x.rank), _axis(dim1, x.rank)
    perm[a], perm[b] = perm[b], perm[a]
    return ops.transpose(x, perm=perm)


def _size(x, dim=None):
    return tuple(x.shape) if dim is None else x.shape[dim]


METHODS = {
    "view": lambda x, *shape: _reshape(x, shape),
    "reshape": lambda x, *shape: _reshape(x, shape),
    "flatten": _flatten,
    "permute": lambda x, *perm: ops.transpose(x, perm=[_axis(p, x.rank) for p in
                                                      (perm[0] if isinstance(perm[0], (list, tuple)) else perm)]),
    "transpose": _transpose,
    "t": lambda x: ops.transpose(x),
    "matmul": ops.matmul,
    "add": ops.add, "sub": ops.sub, "mul": ops.mul, "div": ops.div,
    "mean": lambda x, dim=None, keepdim=False: _reduce_dims(ops.reduce_mean, x, dim, keepdim),
    "sum": lambda x, dim=None, keepdim=False: _reduce_dims(ops.reduce_sum, x, dim, keepdim),
    "relu": ops.relu, "tanh": ops.tanh, "sigmoid": _sigmoid, "exp": ops.exp,
    "softmax": lambda x, dim=-1: ops.softmax(x, axis=dim),
    "log_softmax": lambda x, dim=-1: ops.log_softmax(x, axis=dim),
    "size": _size, "dim": lambda x: x.rank,
    "contiguous": lambda x: x,
    "detach": ops.detach,
    "float": lambda x: ops.cast(x, plexus.float32),
    "max": _max, "argmax": _argmax,
}

from poptorch import lowering_norm  # noqa: E402  (imports Unsupported from here)

MODULES.update(lowering_norm.MODULES)
