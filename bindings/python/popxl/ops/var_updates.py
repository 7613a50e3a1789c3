"""popxl.ops.var_updates: in-place variable updates and optimizer terms (PopXL
ops.var_updates), composed of runtime ops (docs/ops.md).

Every `*_` function writes its target in place (the runtime's `add_`, `scaled_add_` or
`copy_var_update_`) and returns it updated; the updater functions return a new tensor.
A factor that PopXL takes "as a float or a Tensor" may be either here: a Python number
becomes a float32 constant, a Tensor must hold one float32 element. The runtime's floats
are float32, so the targets are float32 (PopXL also allows float16)."""
import numbers as _numbers

import numpy as _np

from plexus import dtypes as _dtypes
from plexus import ops
from plexus.errors import DTypeMismatch as _DTypeMismatch, InvalidArgument as _InvalidArgument
from plexus.errors import ShapeMismatch as _ShapeMismatch
from plexus.ops import constant_like as _constant_like
from plexus.ops import copy_var_update_  # noqa: F401  (the runtime's op of that name)
from plexus.tensor import Tensor


# --- argument checks and scalars -------------------------------------------------------

def _check_tensor(op, name, value):
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {value!r}")


def _check_float32(op, name, value):
    """`value` is a float32 Tensor, else TypeError / DTypeMismatch naming `name`."""
    _check_tensor(op, name, value)
    if value.dtype != _dtypes.float32:
        raise _DTypeMismatch(f"{op}: {name} must be float32, got {value.dtype.name}{list(value.shape)}")


def _check_like(op, name, value, target, target_name="t"):
    """`value` is a float32 Tensor of `target`'s shape, else the error names `name`."""
    _check_float32(op, name, value)
    if value.shape != target.shape:
        raise _ShapeMismatch(f"{op}: {name} {list(value.shape)} must have {target_name}'s shape "
                             f"{list(target.shape)} (no broadcasting)")


def _scalar(op, name, value, like):
    """`value` (a number, or a Tensor of one element of `like`'s dtype) as a [] Tensor of
    that dtype in `like`'s Ir. Raises TypeError, DTypeMismatch, ShapeMismatch naming `name`."""
    if isinstance(value, Tensor):
        if value.dtype != like.dtype:
            raise _DTypeMismatch(f"{op}: {name} must be {like.dtype.name}, got {value.dtype.name}{list(value.shape)}")
        if value.nelms != 1:
            raise _ShapeMismatch(f"{op}: {name} must be a scalar (one element), got shape {list(value.shape)}")
        return value if value.rank == 0 else ops.reshape(value, [])
    if isinstance(value, bool) or not isinstance(value, _numbers.Real):
        raise TypeError(f"{op}: {name} must be a float or a Tensor, got {value!r}")
    return _constant_like(like, _np.float32(value))


def _check_update(op, t, X):
    """Checks of the accumulate family: t and X float32 Tensors of one shape."""
    _check_float32(op, "t", t)
    _check_like(op, "X", X, t)


def _one_minus(f):
    return ops.sub(_constant_like(f, _np.float32(1)), f)


# --- accumulators ----------------------------------------------------------------------

def accumulate_(t, X, f=None):
    """t <- t + f * X in place, returning t updated (PopXL var_updates.accumulate_): `t` and
    `X` of one shape and dtype, `f` None (t + X: float32 or int32), a float or a scalar
    Tensor of their dtype (float32 with a float). Raises ShapeMismatch / DTypeMismatch,
    InvalidArgument (t a constant)."""
    if f is None:
        return ops.add_(t, X)
    if isinstance(f, Tensor):
        return ops.add_(t, ops.mul(X, _scalar("accumulate_", "f", f, t)))
    return ops.scaled_add_(t, X, a=1.0, b=float(f))


def accumulate_square_(t, X, f=1.0):
    """t <- t + f * X^2 in place, returning t updated (PopXL var_updates.accumulate_square_).

    t, X: float32 Tensors of one shape (no broadcasting). f: a float or a one-element
    float32 Tensor (read at run time), default 1. The square is (f * X) * X.
    Raises TypeError (not a Tensor / number), DTypeMismatch, ShapeMismatch (each naming
    the argument), InvalidArgument (t a constant)."""
    _check_update("accumulate_square_", t, X)
    factor = _scalar("accumulate_square_", "f", f, t)
    return ops.add_(t, ops.mul(ops.mul(X, factor), X))


def accumulate_mean_(t, X, step):
    """t <- (step / (step + 1)) * t + (1 / (step + 1)) * X in place, returning t updated:
    the running mean when `step` values were averaged into t before (PopXL
    var_updates.accumulate_mean_). Computed in float32 as b = 1 / (step + 1), a = 1 - b,
    t = a * t + b * X.

    t, X: float32 Tensors of one shape. step: a float or a one-element float32 Tensor.
    Raises TypeError, DTypeMismatch, ShapeMismatch (naming the argument), InvalidArgument
    (t a constant)."""
    _check_update("accumulate_mean_", t, X)
    count = ops.add(_scalar("accumulate_mean_", "step", step, t), _constant_like(t, _np.float32(1)))
    b = ops.div(_constant_like(t, _np.float32(1)), count)
    return ops.copy_var_update_(t, ops.add(ops.mul(_one_minus(b), t), ops.mul(b, X)))


def _moving_average(op, t, update, f):
    """t <- f * t + (1 - f) * update, in place."""
    factor = _scalar(op, "f", f, t)
    return ops.copy_var_update_(t, ops.add(ops.mul(factor, t), ops.mul(_one_minus(factor), update)))


def accumulate_moving_average_(t, X, f):
    """t <- f * t + (1 - f) * X in place, returning t updated (PopXL
    var_updates.accumulate_moving_average_; an exponential moving average of X).

    t, X: float32 Tensors of one shape. f: a float or a one-element float32 Tensor
    (1 - f computed in float32). Raises TypeError, DTypeMismatch, ShapeMismatch (naming
    the argument), InvalidArgument (t a constant)."""
    _check_update("accumulate_moving_average_", t, X)
    return _moving_average("accumulate_moving_average_", t, X, f)


def accumulate_moving_average_square_(t, X, f):
    """t <- f * t + (1 - f) * X^2 in place, returning t updated (PopXL
    var_updates.accumulate_moving_average_square_; Adam's second moment).

    t, X: float32 Tensors of one shape. f: a float or a one-element float32 Tensor; the
    new term is ((1 - f) * X) * X. Raises TypeError, DTypeMismatch, ShapeMismatch (naming
    the argument), InvalidArgument (t a constant)."""
    _check_update("accumulate_moving_average_square_", t, X)
    factor = _scalar("accumulate_moving_average_square_", "f", f, t)
    return ops.copy_var_update_(t, ops.add(ops.mul(factor, t), ops.mul(ops.mul(_one_minus(factor), X), X)))


def accumulator_scale_(t, f):
    """t <- t * f in place, returning t updated (PopXL var_updates.accumulator_scale_).

    t: a float32 Tensor. f: a float or a one-element float32 Tensor. A float 0 sets t to
    zeros (so NaN and inf become 0, as PopXL's zeroing); a Tensor f multiplies, even when
    it holds 0. Raises TypeError, DTypeMismatch, ShapeMismatch (naming the argument),
    InvalidArgument (t a constant)."""
    _check_float32("accumulator_scale_", "t", t)
    factor = _scalar("accumulator_scale_", "f", f, t)
    if not isinstance(f, Tensor) and f == 0:
        return ops.copy_var_update_(t, factor)
    return ops.copy_var_update_(t, ops.mul(t, factor))


def accumulator_zero_(t):
    """t <- 0 in place, returning t (PopXL var_updates.accumulator_zero_):
    accumulator_scale_(t, 0.0). Raises as accumulator_scale_."""
    return accumulator_scale_(t, 0.0)


def _rows_to_front(X, axis, index_rank):
    """The permutation moving X's dims [axis, axis + index_rank) to the front."""
    moved = list(range(axis, axis + index_rank))
    return moved + [d for d in range(X.rank) if d not in moved]


def sparse_accumulate_(t, X, indices, axis=0, f=None, W=None):
    """t[..., indices[i], ...] += f * X[..., i, ...] along `axis`, in place, returning t
    updated (PopXL var_updates.sparse_accumulate_: the scatter-add of a gather's gradient).
    A row named twice receives both updates.

    t: a float32 Tensor. indices: an int32 Tensor of any shape. X: float32, t's shape with
    dim `axis` replaced by indices' shape. axis: in [-t.rank, t.rank). f: None (1), a float
    or a one-element float32 Tensor. W: accepted for PopXL's signature (a tile-mapping
    reference; nothing to map on a CPU) and not read. Made of the runtime's
    `gather_grad` (rows scatter-added into zeros) and `add_`. Raises TypeError,
    DTypeMismatch, ShapeMismatch (naming the argument), InvalidArgument (axis out of
    range, t a constant); an index outside [0, t.shape[axis]) ends the run with RunError
    (PopXL's behaviour there is undefined)."""
    op = "sparse_accumulate_"
    _check_float32(op, "t", t)
    _check_float32(op, "X", X)
    _check_tensor(op, "indices", indices)
    if indices.dtype != _dtypes.int32:
        raise _DTypeMismatch(f"{op}: indices must be int32, got {indices.dtype.name}")
    if not -t.rank <= axis < t.rank:
        raise _InvalidArgument(f"{op}: axis {axis} is out of range for t of rank {t.rank}")
    axis %= t.rank
    expected = t.shape[:axis] + indices.shape + t.shape[axis + 1:]
    if X.shape != expected:
        raise _ShapeMismatch(f"{op}: X {list(X.shape)} must be {list(expected)} (t's shape with dim {axis} "
                             f"replaced by indices' shape)")
    if f is not None:
        X = ops.mul(X, _scalar(op, "f", f, t))
    perm = _rows_to_front(X, axis, indices.rank)
    dense = ops.gather_grad(indices, ops.transpose(X, perm=perm), num_rows=t.shape[axis])
    back = _rows_to_front(t, axis, 1)
    return ops.add_(t, ops.transpose(dense, perm=[back.index(d) for d in range(t.rank)]))


# --- Adam, LAMB and AdaMax -------------------------------------------------------------

def lamb_square(t):
    """The sum of the squares of every element of `t`, float32 [] (PopXL ops.lamb_square:
    LAMB's squared norms r1 = ||w||^2 and r2 = ||x||^2 for adam_var_update). Accumulated in
    double by the runtime's `global_sq_norm`. t: float32. Raises TypeError, DTypeMismatch
    naming t."""
    _check_float32("lamb_square", "t", t)
    return ops.global_sq_norm(t)


def _decays(weight_decay):
    """Whether PopXL applies weight decay: a Tensor always, a number when non-zero."""
    return isinstance(weight_decay, Tensor) or (weight_decay is not None and weight_decay != 0)


def _incremented_step(op, time_step):
    """time_step += 1 in place; its new value as a float32 [] Tensor (float32 or int32)."""
    _check_tensor(op, "time_step", time_step)
    if time_step.dtype not in (_dtypes.float32, _dtypes.int32):
        raise _DTypeMismatch(f"{op}: time_step must be float32 or int32, got {time_step.dtype.name}")
    if time_step.nelms != 1:
        raise _ShapeMismatch(f"{op}: time_step must be a scalar (one element), got shape {list(time_step.shape)}")
    stepped = ops.add_(time_step, _constant_like(time_step, 1))
    value = stepped if stepped.dtype == _dtypes.float32 else ops.cast(stepped, _dtypes.float32)
    return value if value.rank == 0 else ops.reshape(value, [])


def _bias_corrected(op, name, moment, beta, step):
    """moment / (1 - beta ** step), beta ** step as exp(step * log(beta))."""
    power = ops.exp(ops.mul(step, ops.log(_scalar(op, name, beta, moment))))
    return ops.div(moment, _one_minus(power))


def _updater(op, m, v, weight, weight_decay, epsilon, step, betas, root):
    """mc / (root(vc) + eps) [+ wd * w], mc and vc bias corrected by `betas` (beta1,
    beta2 or None) at `step` when `step` is not None; root is sqrt or nothing."""
    mc, vc = m, v
    if step is not None:
        mc = _bias_corrected(op, "beta1", m, betas[0], step)
        if betas[1] is not None:
            vc = _bias_corrected(op, "beta2", v, betas[1], step)
    x = ops.div(mc, ops.add(ops.sqrt(vc) if root else vc, _scalar(op, "epsilon", epsilon, m)))
    if _decays(weight_decay):
        x = ops.add(x, ops.mul(_scalar(op, "weight_decay", weight_decay, m), weight))
    return x


def _check_moments(op, m, v, weight, weight_decay):
    _check_float32(op, "acc_first_order", m)
    _check_like(op, "acc_second_order", v, m, "acc_first_order")
    if _decays(weight_decay) and weight is None:
        raise ValueError(f"{op}: weight_decay {weight_decay!r} needs the weight, got weight=None")
    if weight is not None:
        _check_like(op, "weight", weight, m, "acc_first_order")


def _adam_like(op, m, v, weight, time_step, weight_decay, beta1, beta2, epsilon):
    """adam_updater and lamb_updater: one updater term (PopXL computes both alike)."""
    _check_moments(op, m, v, weight, weight_decay)
    if time_step is not None and (beta1 is None or beta2 is None):
        raise ValueError(f"{op}: bias correction (time_step given) needs beta1 and beta2, got "
                         f"beta1={beta1!r}, beta2={beta2!r}")
    step = _incremented_step(op, time_step) if time_step is not None else None
    return _updater(op, m, v, weight, weight_decay, epsilon, step, (beta1, beta2), root=True)


def adam_updater(acc_first_order, acc_second_order, weight=None, time_step=None, weight_decay=None, beta1=None,
                 beta2=None, epsilon=1e-07):
    """Adam's updater term, a new float32 Tensor of m's shape (PopXL
    var_updates.adam_updater):

        mc = m / (1 - beta1 ** t),  vc = v / (1 - beta2 ** t)   (with time_step; else m, v)
        x  = mc / (sqrt(vc) + epsilon) + weight_decay * weight

    m = acc_first_order, v = acc_second_order: float32 Tensors of one shape; weight: of
    that shape, needed when weight_decay is a Tensor or a non-zero float. time_step: a
    one-element float32 or int32 Tensor; given, it is incremented by 1 in place first and
    t is its new value (bias correction on); None: no correction and no increment, even
    with betas. beta1, beta2, epsilon, weight_decay: floats or one-element float32
    Tensors. beta ** t is computed as exp(t * log(beta)): betas must be >= 0.

    Raises ValueError (weight_decay without weight; time_step without beta1 and beta2),
    TypeError, DTypeMismatch, ShapeMismatch (naming the argument)."""
    return _adam_like("adam_updater", acc_first_order, acc_second_order, weight, time_step, weight_decay, beta1,
                      beta2, epsilon)


def lamb_updater(acc_first_order, acc_second_order, weight=None, time_step=None, weight_decay=None, beta1=None,
                 beta2=None, epsilon=1e-07):
    """LAMB's updater term (PopXL var_updates.lamb_updater): the same term, arguments,
    time_step increment and errors as adam_updater; LAMB differs in the variable update
    (adam_var_update with r1 = lamb_square(w), r2 = lamb_square(x))."""
    return _adam_like("lamb_updater", acc_first_order, acc_second_order, weight, time_step, weight_decay, beta1,
                      beta2, epsilon)


def adamax_updater(acc_first_order, acc_second_order, weight=None, time_step=None, weight_decay=None, beta1=0.9,
                   epsilon=1e-07):
    """AdaMax's updater term, a new float32 Tensor of m's shape (PopXL
    var_updates.adamax_updater):

        x = (m / (1 - beta1 ** t)) / (v + epsilon) + weight_decay * weight

    v = acc_second_order is the infinity-norm accumulator (no square root). time_step is
    required and incremented by 1 in place first (t is its new value). Arguments otherwise
    as adam_updater. Raises ValueError (time_step None; weight_decay without weight),
    TypeError, DTypeMismatch, ShapeMismatch (naming the argument)."""
    op = "adamax_updater"
    _check_moments(op, acc_first_order, acc_second_order, weight, weight_decay)
    if time_step is None:
        raise ValueError(f"{op}: time_step is required (AdaMax always corrects the bias), got None")
    step = _incremented_step(op, time_step)
    return _updater(op, acc_first_order, acc_second_order, weight, weight_decay, epsilon, step, (beta1, None),
                    root=False)


def _where_zero(value, one, ratio):
    """1 where `value` == 0, else ratio."""
    return ops.where(ops.equal(value, _constant_like(value, _np.float32(0))), one, ratio)


def _minimum(a, b):
    """min(a, b) exactly: a where a - b <= 0, else b (the runtime has no min op)."""
    return ops.where(ops.equal(ops.relu(ops.sub(a, b)), _constant_like(a, _np.float32(0))), a, b)


def adam_var_update(t, x, r1, r2, learning_rate=None, max_weight_norm=None):
    """t <- t - lr * ratio * x in place, returning t updated: the weight step of Adam or
    LAMB (PopXL var_updates.adam_var_update), with LAMB's trust ratio

        ratio = min(sqrt(r1), max_weight_norm) / sqrt(r2),
        ratio = 1 where r1 == 0, r2 == 0 or max_weight_norm == 0.

    t, x: float32 Tensors of one shape (x from adam_updater / lamb_updater). r1, r2: the
    squared norms ||t||^2 and ||x||^2 (lamb_square), one-element float32 Tensors (floats
    accepted). learning_rate, max_weight_norm: floats or one-element float32 Tensors;
    None is 0, as PopXL's unset value: learning_rate None leaves t unchanged and
    max_weight_norm None (or 0) gives ratio 1 (plain Adam). The update is
    t + (-(lr * ratio)) * x.

    Raises TypeError, DTypeMismatch, ShapeMismatch (naming the argument), InvalidArgument
    (t a constant)."""
    op = "adam_var_update"
    _check_float32(op, "t", t)
    _check_like(op, "x", x, t)
    r1, r2 = _scalar(op, "r1", r1, t), _scalar(op, "r2", r2, t)
    lr = _scalar(op, "learning_rate", 0.0 if learning_rate is None else learning_rate, t)
    mwn = _scalar(op, "max_weight_norm", 0.0 if max_weight_norm is None else max_weight_norm, t)
    one = _constant_like(t, _np.float32(1))
    ratio = ops.div(_minimum(ops.sqrt(r1), mwn), ops.sqrt(r2))
    for value in (r2, r1, mwn):
        ratio = _where_zero(value, one, ratio)
    return ops.add_(t, ops.mul(x, ops.neg(ops.mul(lr, ratio))))


__all__ = ["copy_var_update_", "accumulate_", "accumulate_square_", "accumulate_mean_", "accumulate_moving_average_",
           "accumulate_moving_average_square_", "accumulator_scale_", "accumulator_zero_", "sparse_accumulate_",
           "adam_updater", "lamb_updater", "adamax_updater", "adam_var_update"]
