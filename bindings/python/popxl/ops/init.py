"""popxl.ops.init: a new tensor, set at each run (PopXL ops.init)."""
import numpy as np

from plexus import dtypes, ops
from plexus.errors import InvalidArgument
from plexus.variables import constant


def init(shape, dtype, name=None, init_type="zero", meta_shape=None):
    """A new, writable tensor of `shape` and `dtype` (PopXL ops.init): zeros for
    init_type "zero"; "undef" (contents unspecified in PopXL) gives zeros too. A copy of a
    zero constant, so in-place ops may update it. `meta_shape` must be None or empty.
    Raises ValueError (another init_type), InvalidArgument (a meta_shape, a bad shape),
    DTypeMismatch."""
    if init_type not in ("zero", "undef"):
        raise ValueError(f"init: init_type must be 'zero' or 'undef', got {init_type!r}")
    if meta_shape:
        raise InvalidArgument(f"init '{name}': meta_shape is not supported (pass the shard's shape)")
    dtype = dtypes.of(dtype)
    return ops.identity(constant(np.zeros(tuple(shape), dtype.numpy), dtype, name))
