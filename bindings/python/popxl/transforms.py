"""popxl.transforms: graph autodiff (plexus.transforms)."""
from plexus.transforms import (autodiff, GradGraphInfo, ExpectedConnection,  # noqa: F401
                               ExpectedConnectionType)

__all__ = ["autodiff", "GradGraphInfo", "ExpectedConnection", "ExpectedConnectionType"]
