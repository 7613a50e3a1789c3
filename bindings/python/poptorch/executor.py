"""poptorch.trainingModel / inferenceModel: a torch.nn.Module run on Plexus (PopTorch's
PoplarExecutor). The first call traces the forward (capture.py), builds the Plexus graph
(forward, and in training the loss's gradients and the optimizer's update) and compiles a
plexus.Session with the Options' device iterations, replication, gradient accumulation,
output mode and execution strategy. A call takes the combined batch (batch x device
iterations x replicas x gradient accumulation) and returns the outputs as torch tensors.
The module's parameters follow the device's lazily: copyWeightsToHost() copies them, and
it happens by itself before another model of the same parameters compiles, at
detachFromDevice(), and for state_dict(). Not thread-safe."""
import weakref

import numpy as np
import torch

import plexus
from poptorch import capture, update
from poptorch.options import Options, OutputMode

_trainers = weakref.WeakSet()  # training executors whose device weights may be newer than the module's


def _sync_parameters(parameters):
    """Copies the device weights of every training executor sharing `parameters` back."""
    for t in list(_trainers):
        if t._dirty and parameters & set(t._names):
            t.copyWeightsToHost()


class PoplarExecutor:
    """A compiled model (PopTorch's PoplarExecutor): call it like the module."""

    def __init__(self, model, options, training, optimizer=None):
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"poptorch: the model must be a torch.nn.Module, got {type(model).__name__}")
        self.model, self.options = model, (options or Options()).clone()
        self.training, self.optimizer = training, optimizer
        if training and optimizer is None:
            self.optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        if training:
            update.check(self.optimizer)
        self._session, self._dirty, self._attached = None, False, True
        self._names, self._states, self._saved_states = {}, [], {}

    # ---- shapes
    def _micro_batches(self):
        o = self.options
        return o.device_iterations * o.replication_factor * (o.gradient_accumulation if self.training else 1)

    def _micro_batch(self, name, t):
        n = self._micro_batches()
        if t.dim() == 0 or t.shape[0] % n:
            raise ValueError(f"poptorch: input '{name}' has batch dim {tuple(t.shape)[:1]}, which does not divide into "
                             f"{n} micro-batches (device iterations {self.options.device_iterations} x replicas "
                             f"{self.options.replication_factor}"
                             + (f" x gradient accumulation {self.options.gradient_accumulation})" if self.training
                                else ")"))
        return (t.shape[0] // n,) + tuple(t.shape[1:])

    # ---- compile
    def _compile(self, args):
        _sync_parameters(set(self.model.parameters()))
        gm, names = capture.trace(self.model, args)
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        ir = plexus.Ir(replication=self.options.replication_factor)
        with ir.main_graph:
            self._in = {n: plexus.h2d_stream(self._micro_batch(n, t), _dtype(t), name=n)
                        for n, t in zip(names, tensors)}
            lowered = capture.Lowering(self.model, {n: plexus.ops.host_load(s) for n, s in self._in.items()},
                                       self.training and self.model.training, self.options.random_seed or 0).run(gm)
            self._out = lowered.store(lowered.outputs)
            self._params = lowered.params
            self._names = {p: v.name for p, v in lowered.params.items()}
            if self.training:
                self._add_update(lowered)
        self._session = plexus.Session(ir, **self._session_options(lowered.blocks))
        for var in self._states:  # the optimizer state kept by detachFromDevice
            if var.name in self._saved_states:
                self._session.write_variable_data(var, self._saved_states[var.name])
        self._saved_states = {}

    def _add_update(self, lowered):
        loss = _loss_of(lowered.outputs)
        trainable = [p for p in lowered.params if isinstance(p, torch.nn.Parameter) and p.requires_grad]
        grads = plexus.autodiff(loss, [lowered.params[p] for p in trainable])
        if self.options.replication_factor > 1:
            grads = [plexus.ops.collectives.replicated_all_reduce_(g, op="mean") for g in grads]
        self._states = []
        self._rates = update.lower(self.optimizer, {p: (lowered.params[p], g) for p, g in zip(trainable, grads)},
                                  self._names, self._states)
        self._written = [g["lr"] for g in self.optimizer.param_groups]

    def _session_options(self, blocks):
        o = self.options
        mode = o.output_mode if o.output_mode != OutputMode.Default else (
            OutputMode.Final if self.training else OutputMode.All)
        out = dict(device_iterations=o.device_iterations, output_mode=mode.name.lower().replace("everyn", "every_n"),
                   output_return_period=o.output_return_period,
                   offload_optimizer_state=int(self.training and o.offload_optimizer_state))
        if self.training:
            out["gradient_accumulation"] = o.gradient_accumulation
        strategy = o.execution_strategy
        if strategy is None and any(ipu is not None for ipu in blocks.values()):
            from poptorch.blocks import PipelinedExecution
            strategy = PipelinedExecution()
        if strategy is not None and blocks:
            out["stages"] = strategy.plexus_stages(blocks)
            out["execution_strategy"] = strategy.plexus_name
        return out

    # ---- calls
    def __call__(self, *args):
        if not self._attached:
            self.attachToDevice()
        if self._session is None:
            self._compile(args)
        elif self.training:
            update.write_rates(self._session, self.optimizer, self._rates, self._written)
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        inputs = {s: _host(t, self._session.host_shape(s), s) for s, t in zip(self._in.values(), tensors)}
        results = self._session.run(inputs)
        if self.training:
            self._dirty = True
            _trainers.add(self)
        return _unflatten(self._out, {s: torch.from_numpy(_flat(results[s], s.shape)) for _, s in _leaves(self._out)})

    # ---- weights
    def copyWeightsToHost(self):
        """Copies the device's weights into the module's parameters and buffers."""
        if self._session is not None:
            with torch.no_grad():
                for p, var in self._params.items():
                    p.copy_(torch.from_numpy(self._session.get_tensor_data(var).reshape(p.shape)))
        self._dirty = False

    def copyWeightsToDevice(self):
        """Copies the module's parameters and buffers to the device."""
        if self._session is not None:
            for p, var in self._params.items():
                self._session.write_variable_data(var, p.detach().cpu().numpy())

    def state_dict(self, *args, **kwargs):
        """The module's state_dict, with the device's weights copied first."""
        self.copyWeightsToHost()
        return self.model.state_dict(*args, **kwargs)

    def setOptimizer(self, optimizer):
        """Uses `optimizer`'s hyper-parameters from the next call (PopTorch setOptimizer): its
        learning rates are written to the device; other hyper-parameters must match."""
        update.check(optimizer)
        self.optimizer = optimizer

    def detachFromDevice(self):
        """Copies the weights to the module and releases the devices (the session); the
        next call compiles again, from the module's weights and the optimizer state
        (momentum, moments, step counts) kept here."""
        if self.training:
            self.copyWeightsToHost()
            if self._session is not None:
                self._saved_states = {v.name: np.array(self._session.get_tensor_data(v)) for v in self._states}
        if self._session is not None:
            self._session.close()
        self._session, self._attached = None, False

    def attachToDevice(self):
        """Attaches again after detachFromDevice (compiled at the next call)."""
        self._attached = True

    def isAttachedToDevice(self):
        """Whether the model holds devices."""
        return self._attached and self._session is not None

    def memory_report(self):
        """The planned memory of the compiled model as a dict (plexus.Session.memory_report;
        schema in docs/profiling.md, sizes in bytes). The model compiles at its first
        call: raises RuntimeError before it, and after detachFromDevice until the next."""
        if self._session is None:
            raise RuntimeError("poptorch: memory_report() needs the compiled model: call the model once first "
                               "(it compiles at its first call, and again after detachFromDevice)")
        return self._session.memory_report()

    def __getattr__(self, name):
        return getattr(self.__dict__["model"], name)


def _dtype(t):
    if t.dtype.is_floating_point:
        return plexus.float32
    if t.dtype in (torch.int64, torch.int32, torch.int16, torch.int8):
        return plexus.int32
    if t.dtype in (torch.uint8, torch.bool):
        return plexus.uint8
    raise TypeError(f"poptorch: inputs of dtype {t.dtype} are not supported")


def _host(t, shape, stream):
    array = t.detach().cpu().numpy().astype(stream.dtype.numpy, copy=False)
    return np.ascontiguousarray(array.reshape(shape))


def _flat(array, shape):
    """A run's [D, G, R] + S output as PopTorch returns it: the micro-batches one after
    another along the batch dim ([-1] + S[1:]), or a vector of scalars."""
    return np.ascontiguousarray(array).reshape((-1,) + tuple(shape[1:]) if shape else (-1,))


def _leaves(structure, path=()):
    if isinstance(structure, (tuple, list)):
        for i, s in enumerate(structure):
            yield from _leaves(s, path + (i,))
    elif isinstance(structure, plexus.Tensor) or isinstance(structure, plexus.tensor.Stream):
        yield path, structure


def _unflatten(streams, values):
    if isinstance(streams, (tuple, list)):
        return type(streams)(_unflatten(s, values) for s in streams)
    return None if streams is None else values[streams]


def _loss_of(outputs):
    """The training loss: the forward's last float scalar output (PopTorch: the loss the
    model returns). Raises ValueError when it returns none."""
    scalars = [t for _, t in _leaves(outputs) if t.rank == 0 and t.dtype == plexus.float32]
    if not scalars:
        raise ValueError("poptorch.trainingModel: the model returned no loss (a float scalar tensor, e.g. "
                         "CrossEntropyLoss()(output, labels) or poptorch.identity_loss(x, reduction='mean'))")
    return scalars[-1]


def trainingModel(model, options=None, optimizer=None):
    """A PoplarExecutor that trains `model` (PopTorch poptorch.trainingModel): each call runs
    device_iterations x gradient_accumulation micro-batches per replica and updates the
    weights with `optimizer` (default SGD lr 0.01, as PopTorch) after each
    gradient_accumulation of them."""
    return PoplarExecutor(model, options, training=True, optimizer=optimizer)


def inferenceModel(model, options=None):
    """A PoplarExecutor that runs `model`'s forward (PopTorch poptorch.inferenceModel)."""
    return PoplarExecutor(model, options, training=False)
