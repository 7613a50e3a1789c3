"""popxl.dtypes: PopXL's element types under their PopXL names, with PopXL's `dtype` class
name (plexus.dtypes.DType: `as_numpy()`, `as_torch()`, `is_int`, `is_floating_point`,
`is_signed`, `is_complex`, `dtype.from_name`, `dtype.as_dtype`). float32, float16, int32,
int8, uint8, uint32 and bool run on Plexus's devices (float16 computed in float32,
docs/ops.md); the others (float64, int64, ...) are named and classified and convert host
data, and a device tensor of one is refused with DTypeMismatch naming it."""
from plexus.dtypes import DType as dtype, HOST_ONLY, float32, int32, uint8, float16, int8, uint32  # noqa: F401
from plexus.dtypes import bool_ as bool  # noqa: A001

(int16, int64, uint16, uint64, float64, complex64, complex128) = HOST_ONLY

float = float32  # PopXL's aliases  # noqa: A001
half = float16
double = float64

__all__ = ["dtype", "float32", "int32", "uint8", "bool", "int8", "int16", "int64", "uint16", "uint32", "uint64",
           "float16", "float64", "complex64", "complex128", "float", "half", "double"]
