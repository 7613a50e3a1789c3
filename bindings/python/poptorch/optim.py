"""poptorch.optim: PopTorch's optimizers, subclasses of torch.optim's taking PopTorch's
extra arguments (poptorch/update.py lowers them to Plexus's optimizer ops)."""
import torch as _torch

# PopTorch's arguments with no CPU meaning (loss scaling, accumulator types, ...).
_POPTORCH_ONLY = ("loss_scaling", "velocity_scaling", "use_combined_accum", "accum_type",
                  "first_order_momentum_accum_type", "second_order_momentum_accum_type", "max_grad_norm",
                  "bias_correction")


def _split(kwargs):
    return {k: v for k, v in kwargs.items() if k not in _POPTORCH_ONLY}


class SGD(_torch.optim.SGD):
    """torch.optim.SGD with PopTorch's extra arguments accepted (poptorch.optim.SGD)."""

    def __init__(self, params, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, **kwargs):
        super().__init__(params, lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                         nesterov=nesterov, **_split(kwargs))


class Adam(_torch.optim.Adam):
    """torch.optim.Adam with PopTorch's extra arguments accepted (poptorch.optim.Adam)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, **kwargs):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         **_split(kwargs))


class AdamW(_torch.optim.AdamW):
    """torch.optim.AdamW with PopTorch's extra arguments accepted (poptorch.optim.AdamW)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, **kwargs):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         **_split(kwargs))


class RMSprop(_torch.optim.RMSprop):
    """torch.optim.RMSprop with PopTorch's extra arguments accepted (poptorch.optim.RMSprop)."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False,
                 **kwargs):
        super().__init__(params, lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                         centered=centered, **_split(kwargs))


class LAMB(_torch.optim.Optimizer):
    """LAMB (poptorch.optim.LAMB; You et al. 2019): Adam's moments, bias-corrected when
    bias_correction, r = m / (sqrt(v) + eps) + weight_decay * w, and the step lr * ratio * r
    with ratio = min(||w||, max_weight_norm) / ||r|| per parameter (1 when a norm is 0).
    Its steps run on Plexus only (a trainingModel); step() on the host raises
    NotImplementedError. Raises ValueError for lr < 0, betas outside [0, 1), eps < 0."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, bias_correction=True,
                 max_weight_norm=None, **kwargs):
        if lr < 0 or eps < 0 or not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"poptorch.optim.LAMB: lr {lr}, betas {betas}, eps {eps} out of range")
        unknown = _split(kwargs)
        if unknown:
            raise TypeError(f"poptorch.optim.LAMB: unexpected arguments {sorted(unknown)}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      bias_correction=bias_correction, max_weight_norm=max_weight_norm))
