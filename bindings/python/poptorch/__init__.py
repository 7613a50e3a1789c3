"""`import poptorch`: PopTorch's API (Graphcore's PopTorch; its user guide and tutorials)
over the `plexus` package, so that PopTorch programs train and run torch.nn models on
Plexus's virtual CPU devices: trainingModel / inferenceModel (torch.fx capture lowered to
Plexus ops), Options, DataLoader, Block / BeginBlock / Stage with Pipelined and Sharded
execution, and poptorch.optim. docs/python.md, "import poptorch", lists what is covered
and every difference from PopTorch."""
from poptorch import optim  # noqa: F401
from poptorch.blocks import (AutoStage, BeginBlock, Block, BlockFunction, PipelinedExecution,  # noqa: F401
                             ShardedExecution, Stage)
from poptorch.capture import UnsupportedOp  # noqa: F401
from poptorch.data import AsynchronousDataAccessor, DataLoader, DataLoaderMode  # noqa: F401
from poptorch.executor import PoplarExecutor, inferenceModel, trainingModel  # noqa: F401
from poptorch.options import AnchorMode, Options, OutputMode, TensorLocationSettings  # noqa: F401

__version__ = "3.0.0+plexus"


def identity_loss(x, reduction):
    """`x` reduced as a loss (PopTorch poptorch.identity_loss): "sum", "mean" or "none"
    (x itself, which must then be a scalar). Raises ValueError for another reduction."""
    if reduction == "sum":
        return x.sum()
    if reduction == "mean":
        return x.mean()
    if reduction == "none":
        return x
    raise ValueError(f"poptorch.identity_loss: reduction must be 'sum', 'mean' or 'none', got {reduction!r}")


_level = 2


def setLogLevel(level):
    """PopTorch's log level (0 trace .. 5 off, or a name): kept; Plexus's own diagnostics
    are its --debug output."""
    global _level
    _level = level


def ipuHardwareIsAvailable(num_ipus=1):
    """False: there are no IPUs; the model runs on Plexus's virtual devices."""
    return False


__all__ = ["optim", "AutoStage", "BeginBlock", "Block", "BlockFunction", "PipelinedExecution", "ShardedExecution",
           "Stage", "UnsupportedOp", "AsynchronousDataAccessor", "DataLoader", "DataLoaderMode", "PoplarExecutor",
           "inferenceModel",
           "trainingModel", "AnchorMode", "Options", "OutputMode", "TensorLocationSettings", "identity_loss",
           "setLogLevel", "ipuHardwareIsAvailable"]
