"""popxl.dtypes: the element types (plexus.dtypes) with PopXL's `dtype` class name;
`DType.as_numpy()` gives the numpy dtype."""
from plexus.dtypes import DType as dtype, float32, int32, uint8  # noqa: F401

float = float32  # PopXL's alias  # noqa: A001

__all__ = ["dtype", "float32", "int32", "uint8", "float"]
