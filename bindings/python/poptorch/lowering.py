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
from plexus import ops


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


def _conv2d(m, ctx, x):
    if _pair(m.dilation) != [1, 1] or m.groups != 1 or m.padding_mode != "zeros" or isinstance(m.padding, str):
        raise Unsupported(f"Conv2d with dilation {m.dilation}, groups {m.groups}, padding {m.padding!r} "
                          f"({m.padding_mode}): only dilation 1, groups 1 and numeric zero padding are lowered")
    return ops.conv2d(x, ctx.param(m.weight), *([ctx.param(m.bias)] if m.bias is not None else []),
                      stride=_pair(m.stride), padding=_pair(m.padding))


def _max_pool2d(m, ctx, x):
    if _pair(m.dilation) != [1, 1] or m.ceil_mode or m.return_indices:
        raise Unsupported("MaxPool2d with dilation, ceil_mode or return_indices")
    return ops.max_pool2d(x, kernel=_pair(m.kernel_size), stride=_pair(m.stride or m.kernel_size),
                          padding=_pair(m.padding))


def _cross_entropy(logits, labels, reduction="mean", ignore_index=-100, label_smoothing=0.0):
    if reduction != "mean" or label_smoothing != 0.0 or logits.rank != 2:
        raise Unsupported(f"cross entropy with reduction={reduction!r}, label_smoothing={label_smoothing}, "
                          f"logits of rank {logits.rank}: only mean over [N, C] logits is lowered")
    return ops.softmax_cross_entropy(logits, ops.cast(labels, plexus.int32), ignore_index=int(ignore_index))


def _mse(a, b, reduction="mean"):
    d = ops.sub(a, b)
    return _reduce(ops.mul(d, d), reduction)


def _l1(a, b, reduction="mean"):
    d = ops.sub(a, b)
    return _reduce(ops.where(ops.equal(ops.relu(d), d), d, ops.neg(d)), reduction)


def _reduce(x, reduction):
    if reduction == "mean":
        return ops.reduce_mean(x)
    if reduction == "sum":
        return ops.reduce_sum(x)
    raise Unsupported(f"reduction={reduction!r} (mean or sum)")


def _sigmoid(x):
    return ops.div(1.0, ops.add(ops.exp(ops.neg(x)), 1.0))


def _dropout(ctx, x, p):
    return ops.dropout(x, p=float(p), seed=ctx.seed) if ctx.training and p > 0 else x


MODULES = {
    torch.nn.Linear: lambda m, ctx, x: linear(x, ctx.param(m.weight), ctx.param(m.bias) if m.bias is not None else None),
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
                                                                   getattr(m, "label_smoothing", 0.0)),
    torch.nn.MSELoss: lambda m, ctx, a, b: _mse(a, b, m.reduction),
    torch.nn.L1Loss: lambda m, ctx, a, b: _l1(a, b, m.reduction),
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
    label_smoothing=0.0: _cross_entropy(a, b, reduction, ignore_index, label_smoothing),
    F.mse_loss: lambda a, b, size_average=None, reduce=None, reduction="mean": _mse(a, b, reduction),
    torch.cat: lambda tensors, dim=0: ops.concat(*tensors, axis=dim),
    torch.mean: lambda x, dim=None, keepdim=False: _reduce_dims(ops.reduce_mean, x, dim, keepdim),
    torch.sum: lambda x, dim=None, keepdim=False: _reduce_dims(ops.reduce_sum, x, dim, keepdim),
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
    "float": lambda x: ops.cast(x, plexus.float32),
}
