"""Optimizers without a runtime op of their own, composed of Plexus's elementwise and
reduction ops, each state tensor written back in place with copy_var_update_ (docs/ops.md):
RMSprop (PyTorch's torch.optim.RMSprop: weight decay, momentum, centered) and LAMB
(You et al. 2019, "Large Batch Optimization for Deep Learning", as PopTorch's
poptorch.optim.LAMB: Adam's moments with bias correction, the layer-wise trust ratio
min(||w||, max_weight_norm) / ||r||, 1 when either norm is 0). `lr` is a float32 [] tensor
read at run time; `state(name, shape)` makes a zero-initialised state variable."""
import math

from plexus import ops


def _update(t, value):
    """t <- value in place; returns t (later reads see the new value)."""
    return ops.copy_var_update_(t, value)


def _moving(t, x, keep):
    """t <- keep * t + (1 - keep) * x in place."""
    return _update(t, ops.add(ops.mul(t, keep), ops.mul(x, 1.0 - keep)))


def rmsprop(w, g, group, lr, state, name):
    """One torch.optim.RMSprop step of w (float32) with gradient g."""
    alpha, eps, decay, momentum = (float(group[k]) for k in ("alpha", "eps", "weight_decay", "momentum"))
    if decay:
        g = ops.add(g, ops.mul(w, decay))
    v = _moving(state(f"{name}.square_avg", w.shape), ops.mul(g, g), alpha)
    if group["centered"]:
        mean = _moving(state(f"{name}.grad_avg", w.shape), g, alpha)
        v = ops.sub(v, ops.mul(mean, mean))
    step = ops.div(g, ops.add(ops.sqrt(v), eps))
    if momentum:
        buf = state(f"{name}.momentum_buffer", w.shape)
        step = _update(buf, ops.add(ops.mul(buf, momentum), step))
    _update(w, ops.sub(w, ops.mul(step, lr)))


def _power(beta, t):
    """beta ** t for a float32 [] tensor t: exp(t log beta)."""
    return ops.exp(ops.mul(t, math.log(beta)))


def _either_zero(a, b):
    """1.0 where a == 0 or b == 0 (float32 scalars), else 0.0."""
    zero_a = ops.cast(ops.equal(a, 0.0), "float32")
    zero_b = ops.cast(ops.equal(b, 0.0), "float32")
    return ops.sub(ops.add(zero_a, zero_b), ops.mul(zero_a, zero_b))


def lamb(w, g, group, lr, state, name):
    """One LAMB step of w (float32) with gradient g."""
    beta1, beta2 = (float(b) for b in group["betas"])
    eps, decay = float(group["eps"]), float(group["weight_decay"])
    count = state(f"{name}.step", ())
    t = _update(count, ops.add(count, 1.0))
    m = _moving(state(f"{name}.exp_avg", w.shape), g, beta1)
    v = _moving(state(f"{name}.exp_avg_sq", w.shape), ops.mul(g, g), beta2)
    if group["bias_correction"]:
        m = ops.div(m, ops.sub(1.0, _power(beta1, t)))
        v = ops.div(v, ops.sub(1.0, _power(beta2, t)))
    r = ops.div(m, ops.add(ops.sqrt(v), eps))
    if decay:
        r = ops.add(r, ops.mul(w, decay))
    w_norm = ops.sqrt(ops.reduce_sum(ops.mul(w, w)))
    if group["max_weight_norm"] is not None:  # min(||w||, cap) = ||w|| - relu(||w|| - cap)
        w_norm = ops.sub(w_norm, ops.relu(ops.sub(w_norm, float(group["max_weight_norm"]))))
    r_norm = ops.sqrt(ops.reduce_sum(ops.mul(r, r)))
    zero = _either_zero(w_norm, r_norm)
    ratio = ops.add(ops.mul(ops.div(w_norm, ops.add(r_norm, zero)), ops.sub(1.0, zero)), zero)
    _update(w, ops.sub(w, ops.mul(r, ops.mul(ratio, lr))))
