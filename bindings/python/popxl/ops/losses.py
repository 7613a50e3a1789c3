"""PopXL's negative log likelihood ops (popxl.ops.nll_loss, nll_loss_with_softmax_grad)
made of runtime ops: the label's probability is picked with a one-hot mask (`equal` of
the labels against the class indices, then `where`), so the loss is exactly -log of it,
and the gradient with respect to the softmax's input is (probs - onehot) * loss_grad,
divided by the rows counted for "mean". Labels equal to `ignore_index` count for
nothing. probs [..., C] float32 (a softmax's output, or log-probabilities with
log_prob), labels [...] int32."""
import numpy as np

from plexus import ops
from plexus.ops import constant_like
from plexus.tensor import Tensor

REDUCTIONS = ("mean", "sum", "none")


def _check(probs, labels, reduction):
    if reduction not in REDUCTIONS:
        raise ValueError(f"Not a valid reduction: {reduction}. Must choose from: {', '.join(REDUCTIONS)}")
    if tuple(labels.shape) != tuple(probs.shape[:-1]):
        raise ValueError(f"nll_loss: labels {list(labels.shape)} must be the shape of probs {list(probs.shape)} "
                         "without its last (class) dim")


def _masks(probs, labels, ignore_index):
    """(onehot bool [..., C], kept f32 [...]): kept is 1 where the row's label is a class
    (in [0, C)) and not `ignore_index`, else 0."""
    classes = constant_like(labels, np.arange(probs.shape[-1], dtype=np.int32))
    onehot = ops.equal(ops.reshape(labels, list(labels.shape) + [1]), classes)
    kept = ops.reduce_sum(ops.cast(onehot, probs.dtype), axes=[-1])
    if ignore_index is not None:
        ignored = ops.equal(labels, constant_like(labels, np.int32(ignore_index)))
        kept = ops.where(ignored, constant_like(probs, np.float32(0)), kept)
    return onehot, kept


def _reduce(per_row, kept, reduction):
    """per_row [...] reduced as `reduction` over the kept rows."""
    if reduction == "none":
        return per_row
    total = ops.reduce_sum(per_row)
    return total if reduction == "sum" else ops.div(total, ops.reduce_sum(kept))


def nll_loss(probs, labels, ignore_index=None, reduction="mean", log_prob=False):
    """-log(probs[label]) per row, reduced by `reduction` ("mean" over the rows not
    ignored, "sum", "none": [...]) (PopXL ops.nll_loss; PyTorch F.nll_loss of log(probs)).
    log_prob: probs are already log-probabilities. A row whose label is outside [0, C)
    counts for nothing, as an ignored one (PopXL leaves it undefined). Raises ValueError (bad reduction, labels not probs' leading
    shape), DTypeMismatch."""
    _check(probs, labels, reduction)
    onehot, kept = _masks(probs, labels, ignore_index)
    picked = ops.reduce_sum(ops.where(onehot, probs, constant_like(probs, np.float32(0))), axes=[-1])
    # Rows that count nothing take log-probability 0 (probability 1): no -inf, no NaN.
    fill = constant_like(probs, np.float32(0 if log_prob else 1))
    picked = ops.where(ops.cast(kept, labels.dtype), picked, fill)
    per_row = ops.neg(picked if log_prob else ops.log(picked))
    return _reduce(per_row, kept, reduction)


def nll_loss_with_softmax_grad(probs, labels, loss_grad=1, ignore_index=None, reduction="mean"):
    """(loss, dx): nll_loss(probs, labels) and the gradient dE/dx of the input x of the
    softmax that made `probs`, (probs - onehot(labels)) * loss_grad (divided by the rows
    not ignored for "mean"), 0 on ignored rows (PopXL ops.nll_loss_with_softmax_grad).
    loss_grad: dE/dloss, a float or a float32 scalar Tensor (for "none", one per row)."""
    loss = nll_loss(probs, labels, ignore_index, reduction)
    onehot, kept = _masks(probs, labels, ignore_index)
    scale = loss_grad if isinstance(loss_grad, Tensor) else constant_like(probs, np.float32(loss_grad))
    if reduction == "mean":
        scale = ops.div(scale, ops.reduce_sum(kept))
    row_scale = ops.mul(kept, scale)
    diff = ops.sub(probs, ops.cast(onehot, probs.dtype))
    dx = ops.mul(diff, ops.reshape(row_scale, list(kept.shape) + [1]))
    return loss, dx
