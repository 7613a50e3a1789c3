"""popxl.dtypes: PopXL's element types under their PopXL names, with PopXL's `dtype` class
name (plexus.dtypes.DType: `as_numpy()`, `as_torch()`, `is_int`, `is_floating_point`,
`is_signed`, `is_complex`, `dtype.from_name`, `dtype.as_dtype`). float32, int32 and uint8
run on Plexus's devices; the others are named and classified, and a tensor of one is
refused with DTypeMismatch naming it (the runtime has no kernels for them yet)."""
from plexus.dtypes import DType as dtype, HOST_ONLY, float32, int32, uint8  # noqa: F401

(bool, int8, int16, int64, uint16, uint32, uint64, float16, float64, complex64,  # noqa: A001
 complex128) = HOST_ONLY

float = float32  # PopXL's aliases  # noqa: A001
half = float16
double = float64

__all__ = ["dtype", "float32", "int32", "uint8", "bool", "int8", "int16", "int64", "uint16", "uint32", "uint64",
           "float16", "float64", "complex64", "complex128", "float", "half", "double"]
