"""Seed tensors from one parent seed (PopXL popxl.create_seeds), the same values as PopXL's:
numpy's default_rng(seed + offset) draws one uint64 per batch, accumulation step and replica,
each split into its high and low 32 bits."""
import numpy as np

_UINT64_MAX = 2 ** 64 - 1


def _int_arg(value, name, minimum):
    """`value` as an int >= `minimum`: TypeError (not an int) or ValueError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"create_seeds: {name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"create_seeds: {name} must be >= {minimum}, got {value}")
    return int(value)


def create_seeds(seed, offset=0, batches_per_step=1, gradient_accumulation_factor=1, replicas=1):
    """A uint32 numpy array of batches_per_step * gradient_accumulation_factor * replicas seed
    tensors, each two uint32 (the high then the low half of a uint64), shaped
    [batches_per_step, gradient_accumulation_factor, replicas, 2] with the dims of size 1
    dropped, as PopXL's (so (2,) for the defaults). Deterministic: the same arguments give
    the same array, equal to PopXL's. seed + offset must be >= 0 (numpy's rule); the counts
    >= 1. TypeError for a non-int argument, ValueError for one out of range, naming it."""
    seed, offset = _int_arg(seed, "seed", -2 ** 63), _int_arg(offset, "offset", -2 ** 63)
    if seed + offset < 0:
        raise ValueError(f"create_seeds: seed + offset must be >= 0, got {seed + offset}")
    dims = [_int_arg(v, n, 1) for v, n in ((batches_per_step, "batches_per_step"),
                                            (gradient_accumulation_factor, "gradient_accumulation_factor"),
                                            (replicas, "replicas"))]
    count = dims[0] * dims[1] * dims[2]
    draws = np.random.default_rng(seed + offset).integers(0, _UINT64_MAX, endpoint=True, dtype=np.uint64, size=count)
    halves = np.stack([(draws >> np.uint64(32)).astype(np.uint32), (draws & np.uint64(0xFFFFFFFF)).astype(np.uint32)],
                      axis=-1)
    return np.squeeze(halves.reshape(*dims, 2))
