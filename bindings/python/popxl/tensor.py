"""popxl.tensor: the tensor types (plexus.tensor) under PopXL's module name."""
from plexus.graph import TensorByRef  # noqa: F401
from plexus.tensor import Tensor, TensorSpec, Variable, Constant, HostToDeviceStream  # noqa: F401

__all__ = ["Tensor", "TensorSpec", "TensorByRef", "Variable", "Constant", "HostToDeviceStream"]
