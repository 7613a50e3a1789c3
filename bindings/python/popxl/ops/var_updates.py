"""popxl.ops.var_updates: in-place variable updates (PopXL ops.var_updates)."""
from plexus import ops
from plexus.ops import copy_var_update_  # noqa: F401  (the runtime's op of that name)
from plexus.tensor import Tensor


def accumulate_(t, X, f=None):
    """t <- t + f * X in place, returning t updated (PopXL var_updates.accumulate_): `t` and
    `X` of one shape and dtype, `f` None (t + X: float32 or int32), a float or a scalar
    Tensor of their dtype (float32 with a float). Raises ShapeMismatch / DTypeMismatch,
    InvalidArgument (t a constant)."""
    if f is None:
        return ops.add_(t, X)
    if isinstance(f, Tensor):
        return ops.add_(t, ops.mul(X, f))
    return ops.scaled_add_(t, X, a=1.0, b=float(f))


__all__ = ["copy_var_update_", "accumulate_"]
