"""The normalisation layers of poptorch.lowering (its MODULES table takes these):
BatchNorm1d/2d, LayerNorm and GroupNorm composed of Plexus ops, so that their gradients
come from Plexus's autodiff. BatchNorm in a training model of a module in training mode
normalises with the batch statistics (biased variance) and updates the running mean and
the running (unbiased) variance in place, as torch; otherwise it uses the running
statistics."""
import numpy as np
import torch

from plexus import layers, ops
from poptorch.lowering import Unsupported


def _affine(m, ctx, y):
    """y * weight + bias along dim 1, for an affine module."""
    return layers.channel_affine(y, *(ctx.param(p) if p is not None else None for p in (m.weight, m.bias)))


def _normalise(centred, var, eps):
    return ops.div(centred, ops.sqrt(ops.add(var, float(eps))))


def _update_running(m, ctx, mean, var, count):
    """running <- running + momentum (batch - running) for the mean and the unbiased variance;
    num_batches_tracked += 1; momentum None: the cumulative average 1 / num_batches_tracked."""
    tracked = ctx.param(m.num_batches_tracked)
    step = ops.add(tracked, 1.0)
    momentum = float(m.momentum) if m.momentum is not None else ops.div(1.0, step)
    unbiased = ops.mul(var, count / max(count - 1, 1))
    for buffer, batch in ((m.running_mean, mean), (m.running_var, unbiased)):
        running = ctx.param(buffer)
        batch = ops.reshape(batch, shape=[-1])
        ops.copy_var_update_(running, ops.add(running, ops.mul(ops.sub(batch, running), momentum)))
    ops.copy_var_update_(tracked, step)


def _batch_norm(m, ctx, x):
    if x.rank < 2 or (isinstance(m, torch.nn.BatchNorm2d) and x.rank != 4):
        raise Unsupported(f"{type(m).__name__} of an input of rank {x.rank}")
    batch_stats = m.running_mean is None or (m.training and ctx.training)
    if not batch_stats:
        centred = ops.sub(x, layers.per_channel(ctx.param(m.running_mean), x.rank))
        return _affine(m, ctx, _normalise(centred, layers.per_channel(ctx.param(m.running_var), x.rank), m.eps))
    axes = [0] + list(range(2, x.rank))
    mean = ops.reduce_mean(x, axes=axes, keepdims=1)
    centred = ops.sub(x, mean)
    var = ops.reduce_mean(ops.mul(centred, centred), axes=axes, keepdims=1)
    if m.running_mean is not None:
        count = int(np.prod([x.shape[a] for a in axes]))
        _update_running(m, ctx, mean, var, count)
    return _affine(m, ctx, _normalise(centred, var, m.eps))


def _layer_norm(m, ctx, x):
    k = len(m.normalized_shape)
    if list(x.shape[x.rank - k:]) != list(m.normalized_shape):
        raise Unsupported(f"LayerNorm{tuple(m.normalized_shape)} of an input of shape {list(x.shape)}")
    size = int(np.prod(m.normalized_shape))
    flat = [ctx.param(p) if p is not None else None for p in (m.weight, getattr(m, "bias", None))]
    flat = [ops.reshape(p, shape=[size]) if p is not None else None for p in flat]
    y = layers.layer_norm_last(ops.reshape(x, shape=list(x.shape[:x.rank - k]) + [size]), m.eps, *flat)
    return ops.reshape(y, shape=list(x.shape))


def _group_norm(m, ctx, x):
    """plexus.layers.group_norm: each sample's groups of C / num_groups channels normalised
    together, then the per-channel affine."""
    if x.rank < 2:
        raise Unsupported(f"GroupNorm of an input of rank {x.rank}")
    return _affine(m, ctx, layers.group_norm(x, m.num_groups, m.eps))


MODULES = {
    torch.nn.BatchNorm1d: _batch_norm,
    torch.nn.BatchNorm2d: _batch_norm,
    torch.nn.LayerNorm: _layer_norm,
    torch.nn.GroupNorm: _group_norm,
}
