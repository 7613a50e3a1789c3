"""poptorch.Options: PopTorch's session options (PopTorch's Options, "Efficient data
batching" and "Execution strategies" in its user guide; seed 003), over plexus.Session's
options. Setters return the Options, so calls chain as in PopTorch. Options that have no
meaning on a CPU are kept and reported by `cpu_ignored()`; an unknown attribute is an
AttributeError, as PopTorch gives. Not thread-safe."""
import copy
import enum

from poptorch.blocks import ExecutionStrategy


class OutputMode(enum.IntEnum):
    """Which micro-batches' outputs a call returns (PopTorch poptorch.OutputMode)."""
    Final = 0
    EveryN = 1
    All = 2
    Sum = 3
    Default = 4  # Final in training, All in inference


AnchorMode = OutputMode  # PopTorch's former name


class TensorLocationSettings:
    """Where a kind of tensor lives (PopTorch poptorch.TensorLocationSettings): only
    `useOnChipStorage(False)` for the optimizer state has a meaning here (the state in host
    memory, seed 003 "offloading"); the others are accepted."""

    def __init__(self):
        self.on_chip = True
        self.settings = {}

    def useOnChipStorage(self, use=True):
        """On the device (True) or in host memory (False)."""
        self.on_chip = bool(use)
        return self

    def __getattr__(self, name):
        if name.startswith("use") or name.startswith("minElements"):
            return lambda *args: self._record(name, args)
        raise AttributeError(f"TensorLocationSettings has no option '{name}'")

    def _record(self, name, args):
        self.settings[name] = args
        return self


class _Group:
    """A group of options (Options.Training, .TensorLocations, ...): each setter records its
    value and returns the group's Options."""

    _setters = ()

    def __init__(self, owner):
        self._owner = owner
        self.values = {}

    def _set(self, name, value):
        self.values[name] = value
        return self._owner

    def __getattr__(self, name):
        if name.startswith("_") or name not in type(self)._setters:
            raise AttributeError(f"{type(self).__name__} has no option '{name}' (it has {', '.join(self._setters)})")
        return lambda value=True: self._set(name, value)


class _Training(_Group):
    _setters = ("gradientAccumulation", "accumulationAndReplicationReductionType",
                "setMeanAccumulationAndReplicationReductionStrategy", "setAutomaticLossScaling",
                "setConvolutionDithering")


class _TensorLocations(_Group):
    _setters = ("setActivationLocation", "setWeightLocation", "setOptimizerLocation", "setAccumulatorLocation",
                "numIOTiles")


class _Popart(_Group):
    """PopART's own options (Options._Popart.set(name, value)): recorded, no effect on a CPU."""

    def set(self, name, value):
        return self._set(name, value)


class _Precision(_Group):
    _setters = ("setPartialsType", "halfFloatCasting", "runningStatisticsAlwaysFloat", "enableStochasticRounding",
                "enableFloatingPointExceptions")


class _Distributed(_Group):
    _setters = ("configureProcessId", "disableDistributed")


class _Jit(_Group):
    _setters = ("traceModel",)


class Options:
    """PopTorch's options object (poptorch.Options). The ones with a CPU meaning:
    deviceIterations(n), replicationFactor(r), randomSeed(s), outputMode(mode,
    output_return_period=1) (also anchorMode), Training.gradientAccumulation(g),
    setExecutionStrategy(PipelinedExecution | ShardedExecution),
    TensorLocations.setOptimizerLocation(TensorLocationSettings().useOnChipStorage(False)).
    The rest (_Popart.set, enableExecutableCaching, connectionType, memory proportions,
    Precision, ...) are kept and listed by cpu_ignored(). Raises ValueError for a count < 1,
    AttributeError for an option PopTorch does not have."""

    _cpu_ignored = ("enableExecutableCaching", "connectionType", "setAvailableMemoryProportion", "useIpuModel",
                    "useIpuId", "useOfflineIpuTarget", "enableSyntheticData", "logDir", "logCycleCount",
                    "enableProfiling", "enableStableNorm", "autoRoundNumIPUs", "setExecutionStrategyOverride",
                    "relaxOptimizerAttributesChecks", "showCompilationProgressBar", "maxRepeatLogs", "modelName",
                    "disableModuleNamescope", "updatableNamedBuffers", "sourceLocationExcludes", "loadFromFile",
                    "toDict", "useIpuModelTiles", "ipuModelVersion", "lockDevicesUntilUsed")

    def __init__(self):
        self.device_iterations = 1
        self.replication_factor = 1
        self.random_seed = None
        self.output_mode = OutputMode.Default
        self.output_return_period = 1
        self.execution_strategy = None
        self.Training = _Training(self)
        self.TensorLocations = _TensorLocations(self)
        self._Popart = _Popart(self)
        self.Precision = _Precision(self)
        self.Distributed = _Distributed(self)
        self.Jit = _Jit(self)
        self.ignored = {}

    @staticmethod
    def _count(name, value):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"Options.{name}: an integer >= 1, got {value!r}")
        return value

    def deviceIterations(self, device_iterations):
        """Steps per call: the batch a call takes is this many times larger."""
        self.device_iterations = self._count("deviceIterations", device_iterations)
        return self

    def replicationFactor(self, replication_factor):
        """Replicas of the model (data parallelism)."""
        self.replication_factor = self._count("replicationFactor", replication_factor)
        return self

    def randomSeed(self, random_seed):
        """Seed of the model's random ops (dropout)."""
        self.random_seed = int(random_seed)
        return self

    def outputMode(self, output_mode, output_return_period=None):
        """Which outputs a call returns (OutputMode, or its name). EveryN needs
        output_return_period, which must divide deviceIterations when the model runs."""
        if isinstance(output_mode, str):
            output_mode = OutputMode[output_mode]
        self.output_mode = OutputMode(output_mode)
        if self.output_mode == OutputMode.EveryN:
            if output_return_period is None:
                raise ValueError("Options.outputMode: EveryN needs output_return_period")
            self.output_return_period = self._count("output_return_period", output_return_period)
        elif output_return_period is not None:
            raise ValueError("Options.outputMode: output_return_period is only for EveryN, "
                             f"not {self.output_mode.name}")
        return self

    anchorMode = outputMode

    def setExecutionStrategy(self, strategy):
        """PipelinedExecution or ShardedExecution of Stages (poptorch.blocks)."""
        if not isinstance(strategy, ExecutionStrategy):
            raise TypeError(f"Options.setExecutionStrategy: a PipelinedExecution or ShardedExecution, got {strategy!r}")
        self.execution_strategy = strategy
        return self

    @property
    def gradient_accumulation(self):
        """Training.gradientAccumulation's value (1 unless set)."""
        return self._count("Training.gradientAccumulation", self.Training.values.get("gradientAccumulation", 1))

    @property
    def offload_optimizer_state(self):
        """Whether TensorLocations.setOptimizerLocation put the optimizer state off chip."""
        where = self.TensorLocations.values.get("setOptimizerLocation")
        return where is not None and not where.on_chip

    def cpu_ignored(self):
        """{option: value} of the options that have no effect on Plexus's CPU devices."""
        out = {f"_Popart.{k}": v for k, v in self._Popart.values.items()}
        out.update({f"Precision.{k}": v for k, v in self.Precision.values.items()})
        out.update(self.ignored)
        return out

    def clone(self):
        """A deep copy (PopTorch Options.clone)."""
        return copy.deepcopy(self)

    def __getattr__(self, name):
        if name in Options._cpu_ignored:
            return lambda *args, **kwargs: self._ignore(name, args or kwargs)
        raise AttributeError(f"poptorch.Options has no option '{name}'")

    def _ignore(self, name, value):
        self.ignored[name] = value
        return self
