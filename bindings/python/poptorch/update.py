"""The weight update of a poptorch.trainingModel: its optimizer lowered to Plexus's
optimizer ops (SGD -> sgd_momentum_, Adam / AdamW -> adamw_; docs/ops.md, PyTorch's
definitions, bias correction included) or composed of elementwise ops (RMSprop, LAMB:
composed_optimizers.py). Each parameter's learning rate is a variable
read at run time, so a change between calls (`optimizer.param_groups[0]["lr"] = ...`, a
torch LR scheduler, setOptimizer) takes effect without recompiling. torch.optim instances
of those classes are converted (said once on stderr)."""
import sys

import numpy as np
import torch

import plexus
from plexus import ops
from poptorch import composed_optimizers
from poptorch.optim import LAMB

_told = set()


def check(optimizer):
    """Raises plexus.Unsupported for an optimizer or option with no lowering; says once
    when a torch.optim instance is converted."""
    if not any(isinstance(optimizer, cls) for cls, _ in _LOWERINGS):
        raise plexus.Unsupported(f"poptorch: optimizer {type(optimizer).__name__} is not supported "
                                 "(SGD, Adam, AdamW, RMSprop, LAMB)")
    if not type(optimizer).__module__.startswith("poptorch") and type(optimizer) not in _told:
        _told.add(type(optimizer))
        print(f"poptorch: torch.optim.{type(optimizer).__name__} converted to poptorch.optim."
              f"{type(optimizer).__name__}", file=sys.stderr)
    for group in optimizer.param_groups:
        for flag in ("amsgrad", "maximize"):
            if group.get(flag):
                raise plexus.Unsupported(f"poptorch: {type(optimizer).__name__}({flag}=True) is not supported")


def _sgd(w, g, group, lr, state, name):
    ops.sgd_momentum_(w, g, state(f"{name}.momentum_buffer", w.shape), state(f"{name}.step", ()), lr,
                      momentum=float(group["momentum"]), dampening=float(group["dampening"]),
                      weight_decay=float(group["weight_decay"]), nesterov=int(bool(group["nesterov"])))


def _adam(w, g, group, lr, state, name, decoupled):
    decay = float(group["weight_decay"])
    if not decoupled and decay:
        g = ops.add(g, ops.mul(w, decay))  # Adam's L2 term, before the moments
        decay = 0.0
    beta1, beta2 = group["betas"]
    ops.adamw_(w, g, state(f"{name}.exp_avg", w.shape), state(f"{name}.exp_avg_sq", w.shape),
               state(f"{name}.step", ()), lr, beta1=float(beta1), beta2=float(beta2), eps=float(group["eps"]),
               weight_decay=decay)


# The lowering of each optimizer class (the first match in order: AdamW before Adam).
_LOWERINGS = ((torch.optim.SGD, _sgd),
              (torch.optim.AdamW, lambda *a: _adam(*a, decoupled=True)),
              (torch.optim.Adam, lambda *a: _adam(*a, decoupled=False)),
              (torch.optim.RMSprop, composed_optimizers.rmsprop),
              (LAMB, composed_optimizers.lamb))


def _step(w, g, group, lr, name, optimizer, states):
    def state(state_name, shape):
        states.append(plexus.variable(np.zeros(shape, np.float32), plexus.float32, name=state_name))
        return states[-1]

    lowering = next(fn for cls, fn in _LOWERINGS if isinstance(optimizer, cls))
    lowering(w, g, group, lr, state, name)


def lower(optimizer, grads, names, states=None):
    """Adds the update of every parameter of `optimizer` that has a gradient: `grads`
    {torch Parameter: (Variable, gradient Tensor)}, `names` {Parameter: name}. Returns the
    learning-rate variables as [(group index, Variable)]: one per parameter, since a
    variable lives on one pipeline stage. The optimizer state's variables (momentum,
    moments, step counts) are appended to `states` when given. Raises plexus.Unsupported
    for another optimizer or option."""
    states = [] if states is None else states
    check(optimizer)
    rates = []
    for i, group in enumerate(optimizer.param_groups):
        for p in group["params"]:
            if p in grads:
                w, g = grads[p]
                lr = plexus.variable(np.float32(group["lr"]), plexus.float32, name=f"{names[p]}.lr")
                rates.append((i, lr))
                _step(w, g, group, lr, names[p], optimizer, states)
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
