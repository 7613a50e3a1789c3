"""poptorch.optim: PopTorch's optimizers (subclasses of torch.optim's, taking PopTorch's
extra arguments), and their lowering to Plexus's optimizer ops: SGD -> sgd_momentum_,
Adam / AdamW -> adamw_ (docs/ops.md; PyTorch's definitions, bias correction included).
Each parameter group's learning rate is a variable read at run time, so a change between
calls (`optimizer.param_groups[0]["lr"] = ...`, a torch LR scheduler, setOptimizer) takes
effect without recompiling. torch.optim instances of those classes are converted (said
once on stderr)."""
import sys

import numpy as np
import torch

import plexus
from plexus import ops

# PopTorch's arguments with no CPU meaning (loss scaling, accumulator types, ...).
_POPTORCH_ONLY = ("loss_scaling", "velocity_scaling", "use_combined_accum", "accum_type",
                  "first_order_momentum_accum_type", "second_order_momentum_accum_type", "max_grad_norm",
                  "bias_correction")


def _split(kwargs):
    return {k: v for k, v in kwargs.items() if k not in _POPTORCH_ONLY}


class SGD(torch.optim.SGD):
    """torch.optim.SGD with PopTorch's extra arguments accepted (poptorch.optim.SGD)."""

    def __init__(self, params, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, **kwargs):
        super().__init__(params, lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                         nesterov=nesterov, **_split(kwargs))


class Adam(torch.optim.Adam):
    """torch.optim.Adam with PopTorch's extra arguments accepted (poptorch.optim.Adam)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, **kwargs):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         **_split(kwargs))


class AdamW(torch.optim.AdamW):
    """torch.optim.AdamW with PopTorch's extra arguments accepted (poptorch.optim.AdamW)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, **kwargs):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         **_split(kwargs))


_told = set()


def _check(optimizer):
    if not isinstance(optimizer, (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW)):
        raise plexus.Unsupported(f"poptorch: optimizer {type(optimizer).__name__} is not supported "
                                 "(SGD, Adam, AdamW)")
    if not type(optimizer).__module__.startswith("poptorch") and type(optimizer) not in _told:
        _told.add(type(optimizer))
        print(f"poptorch: torch.optim.{type(optimizer).__name__} converted to poptorch.optim."
              f"{type(optimizer).__name__}", file=sys.stderr)
    for group in optimizer.param_groups:
        for flag in ("amsgrad", "maximize"):
            if group.get(flag):
                raise plexus.Unsupported(f"poptorch: {type(optimizer).__name__}({flag}=True) is not supported")


def _state(name, shape):
    return plexus.variable(np.zeros(shape, np.float32), plexus.float32, name=name)


def _step(w, g, group, lr, name, optimizer):
    if isinstance(optimizer, torch.optim.SGD):
        buf = _state(f"{name}.momentum_buffer", w.shape)
        ops.sgd_momentum_(w, g, buf, _state(f"{name}.step", ()), lr, momentum=float(group["momentum"]),
                          dampening=float(group["dampening"]), weight_decay=float(group["weight_decay"]),
                          nesterov=int(bool(group["nesterov"])))
        return
    decay = float(group["weight_decay"])
    if not isinstance(optimizer, torch.optim.AdamW) and decay:
        g = ops.add(g, ops.mul(w, decay))  # Adam's L2 term, before the moments
        decay = 0.0
    beta1, beta2 = group["betas"]
    ops.adamw_(w, g, _state(f"{name}.exp_avg", w.shape), _state(f"{name}.exp_avg_sq", w.shape),
               _state(f"{name}.step", ()), lr, beta1=float(beta1), beta2=float(beta2), eps=float(group["eps"]),
               weight_decay=decay)


def lower(optimizer, grads, names):
    """Adds the update of every parameter of `optimizer` that has a gradient: `grads`
    {torch Parameter: (Variable, gradient Tensor)}, `names` {Parameter: name}. Returns the
    learning-rate variables as [(group index, Variable)]: one per parameter, since a
    variable lives on one pipeline stage. Raises plexus.Unsupported for another optimizer
    or option."""
    _check(optimizer)
    rates = []
    for i, group in enumerate(optimizer.param_groups):
        for p in group["params"]:
            if p in grads:
                w, g = grads[p]
                lr = plexus.variable(np.float32(group["lr"]), plexus.float32, name=f"{names[p]}.lr")
                rates.append((i, lr))
                _step(w, g, group, lr, names[p], optimizer)
    return rates


def write_rates(session, optimizer, rates, written):
    """Writes each group's lr to its variables when it changed since `written` (a list of
    one lr per group, updated in place)."""
    for i, group in enumerate(optimizer.param_groups):
        if written[i] == group["lr"]:
            continue
        for var in [var for j, var in rates if j == i]:
            session.write_variable_data(var, np.float32(group["lr"]))
        written[i] = group["lr"]
