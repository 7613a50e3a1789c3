"""Model partitioning (PopTorch poptorch.Block, BeginBlock, Stage, AutoStage,
PipelinedExecution, ShardedExecution; seed 003 "Annotation for model partitioning" and
"Execution strategies"). A Block names the ops traced inside it; stages group blocks onto
devices; the strategy becomes plexus.Session's `stages` and `execution_strategy`. The
current block is per thread of tracing (a module-level stack: tracing is single-threaded)."""
import enum
import functools

_stack = []  # (block name, ipu_id) of the Blocks entered while tracing


def current_block():
    """(name, ipu_id) of the innermost Block being traced, or None outside any."""
    return _stack[-1] if _stack else None


class Block:
    """Ops traced inside `with poptorch.Block(user_id, ipu_id=None):` (or a function
    decorated with it) belong to block `user_id`; `ipu_id` places the block on that device
    when no execution strategy says otherwise. A Block without user_id takes the name
    "ipu<ipu_id>"; with neither, ValueError."""

    def __init__(self, user_id=None, ipu_id=None):
        if user_id is None and ipu_id is None:
            raise ValueError("poptorch.Block: give a user_id (the block's name) or an ipu_id")
        self.user_id = str(user_id) if user_id is not None else f"ipu{ipu_id}"
        self.ipu_id = None if ipu_id is None else int(ipu_id)

    def __enter__(self):
        _stack.append((self.user_id, self.ipu_id))
        return self

    def __exit__(self, *exc):
        _stack.pop()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def in_block(*args, **kwargs):
            with Block(self.user_id, self.ipu_id):
                return fn(*args, **kwargs)
        return in_block


class BlockFunction(Block):
    """PopTorch's decorator spelling of Block (poptorch.BlockFunction(user_id, ipu_id))."""


def BeginBlock(module, user_id=None, ipu_id=None):
    """Starts block `user_id` at `module` (PopTorch poptorch.BeginBlock): the module's ops,
    and those traced after it until the next BeginBlock or Block, belong to the block.
    Returns the module (marked). Raises TypeError for a non-module."""
    import torch
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"poptorch.BeginBlock: a torch.nn.Module, got {type(module).__name__}")
    module._poptorch_begin_block = Block(user_id, ipu_id)
    return module


class AutoStage(enum.IntEnum):
    """How blocks without a Stage become stages (PopTorch poptorch.AutoStage)."""
    SameAsIpu = 0
    AutoIncrement = 1


class Stage:
    """Blocks run together on one device (PopTorch poptorch.Stage(*block_ids).ipu(n))."""

    def __init__(self, *block_ids):
        if not block_ids:
            raise ValueError("poptorch.Stage: name at least one block")
        self.blocks = [str(b) for b in block_ids]
        self.ipu_id = None

    def ipu(self, ipu_id):
        """Places the stage on device `ipu_id`; returns the Stage."""
        self.ipu_id = int(ipu_id)
        return self


class ExecutionStrategy:
    """Stages, or block names (one stage each), or an AutoStage (PopTorch's strategies)."""

    plexus_name = None

    def __init__(self, *stages):
        if len(stages) == 1 and isinstance(stages[0], AutoStage):
            self.auto, self.stages = stages[0], []
        else:
            self.auto = AutoStage.SameAsIpu
            self.stages = [s if isinstance(s, Stage) else Stage(s) for s in stages]

    def plexus_stages(self, blocks):
        """plexus.Stage list for the traced `blocks` ({name: ipu_id or None}, in first-use
        order). Raises ValueError for a Stage naming a block the model does not have, or a
        block no stage holds."""
        import plexus
        stages = self.stages or self._auto_stages(blocks)
        named = [b for s in stages for b in s.blocks]
        unknown = [b for b in named if b not in blocks]
        if unknown:
            raise ValueError(f"{type(self).__name__}: Stage names block(s) {unknown} that the model does not have "
                             f"(its blocks: {list(blocks)})")
        missing = [b for b in blocks if b not in named]
        if missing:
            raise ValueError(f"{type(self).__name__}: block(s) {missing} are in no Stage")
        return [plexus.Stage(*s.blocks, device=i if s.ipu_id is None else s.ipu_id) for i, s in enumerate(stages)]

    def _auto_stages(self, blocks):
        if self.auto == AutoStage.AutoIncrement:
            return [Stage(b) for b in blocks]
        by_ipu = {}
        for i, (name, ipu) in enumerate(blocks.items()):
            by_ipu.setdefault(i if ipu is None else ipu, []).append(name)
        return [Stage(*names).ipu(ipu) for ipu, names in sorted(by_ipu.items())]


class PipelinedExecution(ExecutionStrategy):
    """Stages as a pipeline: micro-batches flow through the stages' devices at once
    (plexus "pipelined", 1F1B)."""
    plexus_name = "pipelined"


class ShardedExecution(ExecutionStrategy):
    """Stages run one after another on their devices (plexus "sharded")."""
    plexus_name = "sharded"
