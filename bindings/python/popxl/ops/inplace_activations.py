"""popxl.ops.inplace_activations: PopXL's in-place activations ops.relu_ and ops.gelu_,
each the runtime's activation written back over its input with `copy_var_update_`."""
from plexus import ops


def _in_place(activation, t):
    """t <- activation(t) in place; returns t updated."""
    return ops.copy_var_update_(t, activation(t))


def relu_(t):
    """t <- max(t, 0) elementwise, in place, returning t updated (PopXL ops.relu_).

    t: a float32 Tensor of any shape, not a constant. The runtime's `relu`, then
    `copy_var_update_` into t, so every later reader of t sees the activation. Not
    differentiable by transforms.autodiff (copy_var_update_ has no gradient; use ops.relu
    on a path to be differentiated). Raises DTypeMismatch (t not float32),
    InvalidArgument (t a constant or not a Tensor)."""
    return _in_place(ops.relu, t)


def gelu_(t):
    """t <- gelu(t) elementwise, in place, returning t updated (PopXL ops.gelu_), with the
    tanh approximation 0.5 t (1 + tanh(sqrt(2 / pi) (t + 0.044715 t^3))) of the runtime's
    `gelu` (and of PopXL's ops.gelu; the exact erf form is PopXL's ops.geluerf).

    t: a float32 Tensor of any shape, not a constant. Not differentiable by
    transforms.autodiff (as relu_). Raises DTypeMismatch (t not float32), InvalidArgument
    (t a constant or not a Tensor)."""
    return _in_place(ops.gelu, t)


__all__ = ["relu_", "gelu_"]
