"""poptorch training against the same loop in plain PyTorch from the same initial weights and
data, the Options' effects (device iterations and output modes, gradient accumulation,
replication, learning-rate changes, weight copies, detach, pipelined and sharded
execution) and bad input (each a clear error naming the thing; the interpreter carries on).

Tolerances: loss curves rtol 1e-4 (+ atol 1e-6), weights atol 1e-5 after 20 steps;
one-step comparisons atol 1e-6; pipelined / sharded against one device: bit-identical."""
import copy
import inspect
import os

import pytest
import torch

poptorch = pytest.importorskip("poptorch")

STEPS = 20
LOSS_RTOL, LOSS_ATOL = 1e-4, 1e-6
WEIGHT_ATOL = 1e-5
STEP_ATOL = 1e-6


class MLP(torch.nn.Module):
    """8 -> 16 -> 4 with a cross-entropy loss; returns (logits, loss)."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.act = torch.nn.ReLU()
        self.fc2 = torch.nn.Linear(16, 4)
        self.loss = torch.nn.CrossEntropyLoss()

    def forward(self, x, labels):
        logits = self.fc2(self.act(self.fc1(x)))
        return logits, self.loss(logits, labels)


class Regress(torch.nn.Module):
    """4 -> 6 -> 3 with tanh and an MSE loss; returns (y, loss)."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 6)
        self.fc2 = torch.nn.Linear(6, 3)
        self.loss = torch.nn.MSELoss()

    def forward(self, x, target):
        y = self.fc2(torch.tanh(self.fc1(x)))
        return y, self.loss(y, target)


class FourBlocks(torch.nn.Module):
    """Four Linear + tanh layers, each in Block "B<i>" when `blocks` (its ipu_id i-1), and
    the MSE loss in B4."""

    def __init__(self, blocks):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(4, 4) for _ in range(4)])
        self.loss = torch.nn.MSELoss()
        self.blocks = blocks

    def forward(self, x, target):
        for i, layer in enumerate(self.layers):
            if self.blocks:
                with poptorch.Block(f"B{i + 1}", ipu_id=i):
                    x = torch.tanh(layer(x))
            else:
                x = torch.tanh(layer(x))
        if self.blocks:
            with poptorch.Block("B4", ipu_id=3):
                return x, self.loss(x, target)
        return x, self.loss(x, target)


def _max_diff(a, b):
    """max |a - b| over the entries of two state dicts."""
    assert set(a) == set(b)
    return max(float((a[k].double() - b[k].double()).abs().max()) for k in a)


def _data(n, batch, seed=0, features=8, classes=4):
    """n batches of (x, labels) with labels a fixed linear function's argmax of x (learnable)."""
    g = torch.Generator().manual_seed(seed)
    teacher = torch.randn(features, classes, generator=g)
    xs = [torch.randn(batch, features, generator=g) for _ in range(n)]
    return [(x, (x @ teacher).argmax(1)) for x in xs]


def _regress_data(rows, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, 4, generator=g), torch.randn(rows, 3, generator=g)


def _torch_step(model, opt, *inputs):
    opt.zero_grad()
    loss = model(*inputs)[1]
    loss.backward()
    opt.step()
    return float(loss)


# ---------------------------------------------------------------- training against PyTorch

OPTIMIZERS = {
    "SGD(momentum=0.9)": lambda params, cls: cls(params, lr=0.05, momentum=0.9),
    "SGD(momentum=0.9, nesterov, weight_decay)": lambda params, cls: cls(params, lr=0.05, momentum=0.9,
                                                                        nesterov=True, weight_decay=0.01),
    "AdamW": lambda params, cls: cls(params, lr=0.03, weight_decay=0.01),
    "Adam(weight_decay)": lambda params, cls: cls(params, lr=0.03, weight_decay=0.01),
    "RMSprop": lambda params, cls: cls(params, lr=0.01),
    "RMSprop(momentum, centered, weight_decay)": lambda params, cls: cls(params, lr=0.005, momentum=0.5,
                                                                        centered=True, weight_decay=0.01),
}
_TORCH = {"SGD": torch.optim.SGD, "AdamW": torch.optim.AdamW, "Adam": torch.optim.Adam,
          "RMSprop": torch.optim.RMSprop}
_POPTORCH = {"SGD": poptorch.optim.SGD, "AdamW": poptorch.optim.AdamW, "Adam": poptorch.optim.Adam,
             "RMSprop": poptorch.optim.RMSprop}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_mlp_training_matches_pytorch(name):
    """20 steps of an MLP: the loss curve within rtol 1e-4 and the final weights within 1e-5
    of the same loop in PyTorch."""
    kind = name.split("(")[0]
    torch.manual_seed(1)
    model = MLP()
    reference = copy.deepcopy(model)
    data = _data(STEPS, 8)
    opt = OPTIMIZERS[name](reference.parameters(), _TORCH[kind])
    expected = [_torch_step(reference, opt, x, y) for x, y in data]

    training = poptorch.trainingModel(model, optimizer=OPTIMIZERS[name](model.parameters(), _POPTORCH[kind]))
    got = [float(training(x, y)[1]) for x, y in data]
    torch.testing.assert_close(torch.tensor(got), torch.tensor(expected), rtol=LOSS_RTOL, atol=LOSS_ATOL)
    assert sum(expected[-5:]) < 0.8 * sum(expected[:5])  # it learns: the curves are not flat
    assert _max_diff(training.state_dict(), reference.state_dict()) < WEIGHT_ATOL


def test_memory_report_after_compilation_with_optimizer_state_and_gradients():
    torch.manual_seed(1)
    model = MLP()
    training = poptorch.trainingModel(model, optimizer=poptorch.optim.AdamW(model.parameters(), lr=0.01))
    with pytest.raises(RuntimeError, match="call the model once first"):
        training.memory_report()
    x, y = _data(1, 8)[0]
    training(x, y)
    (device,) = training.memory_report()["devices"]
    assert device["planned_peak_bytes"] == max(sum(s["bytes"].values()) for s in device["steps"])
    parameters = 4 * (8 * 16 + 16 + 16 * 4 + 4)
    assert all(s["bytes"]["variables"] >= parameters for s in device["steps"])
    # AdamW's two moments per parameter, and step counts.
    assert all(s["bytes"]["optimizer_state"] >= 2 * parameters for s in device["steps"])
    assert any(s["bytes"]["gradients"] > 0 for s in device["steps"] if s["phase"] == "backward")
    inference = poptorch.inferenceModel(MLP())
    with pytest.raises(RuntimeError, match="compiles at its first call"):
        inference.memory_report()


def _lamb_reference(model, data, lr, weight_decay, max_weight_norm, betas=(0.9, 0.999), eps=1e-8):
    """Losses of LAMB steps on `model` in plain PyTorch, from the definition (You et al.
    2019; PopTorch's LAMB): bias-corrected moments, r = m / (sqrt(v) + eps) + wd w, w -= lr
    min(||w||, cap) / ||r|| r (ratio 1 when a norm is 0)."""
    state = {p: (torch.zeros_like(p), torch.zeros_like(p)) for p in model.parameters()}
    losses = []
    for t, (x, y) in enumerate(data, start=1):
        model.zero_grad()
        loss = model(x, y)[1]
        loss.backward()
        losses.append(float(loss))
        with torch.no_grad():
            for p, (m, v) in state.items():
                m.mul_(betas[0]).add_(p.grad, alpha=1 - betas[0])
                v.mul_(betas[1]).addcmul_(p.grad, p.grad, value=1 - betas[1])
                r = (m / (1 - betas[0] ** t)) / ((v / (1 - betas[1] ** t)).sqrt() + eps) + weight_decay * p
                w_norm, r_norm = p.norm(), r.norm()
                if max_weight_norm is not None:
                    w_norm = w_norm.clamp(max=max_weight_norm)
                ratio = 1.0 if w_norm == 0 or r_norm == 0 else w_norm / r_norm
                p.sub_(lr * ratio * r)
    return losses


@pytest.mark.parametrize("max_weight_norm", [None, 0.5])
def test_lamb_matches_its_definition(max_weight_norm):
    """20 LAMB steps (with and without a weight-norm cap): the loss curve and weights of the
    definition's plain-PyTorch steps."""
    torch.manual_seed(2)
    model = MLP()
    reference = copy.deepcopy(model)
    data = _data(STEPS, 8)
    expected = _lamb_reference(reference, data, lr=0.1, weight_decay=0.01, max_weight_norm=max_weight_norm)
    optimizer = poptorch.optim.LAMB(model.parameters(), lr=0.1, weight_decay=0.01, max_weight_norm=max_weight_norm)
    training = poptorch.trainingModel(model, optimizer=optimizer)
    got = [float(training(x, y)[1]) for x, y in data]
    torch.testing.assert_close(torch.tensor(got), torch.tensor(expected), rtol=LOSS_RTOL, atol=LOSS_ATOL)
    assert sum(expected[-5:]) < 0.8 * sum(expected[:5])
    assert _max_diff(training.state_dict(), reference.state_dict()) < WEIGHT_ATOL
    with pytest.raises(TypeError, match="unexpected arguments"):
        poptorch.optim.LAMB(model.parameters(), lr=0.1, nesterov=True)


def test_torch_optimizer_is_converted():
    """A torch.optim.SGD instance trains as poptorch.optim.SGD does."""
    torch.manual_seed(2)
    model = MLP()
    reference = copy.deepcopy(model)
    x, y = _data(1, 8)[0]
    training = poptorch.trainingModel(model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5))
    training(x, y)
    training(x, y)
    opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.5)
    _torch_step(reference, opt, x, y)
    _torch_step(reference, opt, x, y)
    assert _max_diff(training.state_dict(), reference.state_dict()) < STEP_ATOL


# ---------------------------------------------------------------- device iterations, output modes

@pytest.mark.parametrize("mode", ["All", "Final", "Sum", "EveryN", "Default"])
@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
def test_device_iterations_output_modes(mode, train):
    """deviceIterations(4) over a combined batch of 4 x 2: All is the 4 micro-batches one
    after another along dim 0 (losses as a vector of 4), Final the last micro-batch, Sum
    their sum, EveryN(2) micro-batches 1 and 3; Default is All in inference and Final in
    training. Training runs with lr 0, so every micro-batch sees the initial weights."""
    torch.manual_seed(3)
    model = Regress()
    x, t = _regress_data(8)
    opts = poptorch.Options().deviceIterations(4)
    if mode == "EveryN":
        opts.outputMode(poptorch.OutputMode.EveryN, 2)
    else:
        opts.outputMode(poptorch.OutputMode[mode])
    with torch.no_grad():
        ys = [model(x[i * 2:(i + 1) * 2], t[i * 2:(i + 1) * 2]) for i in range(4)]
    y_all, loss_all = torch.cat([y for y, _ in ys]), torch.stack([loss for _, loss in ys])
    if train:
        executor = poptorch.trainingModel(model, opts, optimizer=poptorch.optim.SGD(model.parameters(), lr=0.0))
    else:
        executor = poptorch.inferenceModel(model, opts)
    y, loss = executor(x, t)
    effective = mode if mode != "Default" else ("Final" if train else "All")
    expected = {
        "All": (y_all, loss_all),
        "Final": (ys[-1][0], loss_all[-1:]),
        "Sum": (sum(y for y, _ in ys), loss_all.sum().reshape(1)),
        "EveryN": (torch.cat([ys[1][0], ys[3][0]]), loss_all[[1, 3]]),
    }[effective]
    assert tuple(y.shape) == tuple(expected[0].shape) and tuple(loss.shape) == tuple(expected[1].shape)
    torch.testing.assert_close(y, expected[0], atol=STEP_ATOL, rtol=1e-5)
    torch.testing.assert_close(loss, expected[1], atol=STEP_ATOL, rtol=1e-5)


def test_device_iterations_train_one_step_per_micro_batch():
    """deviceIterations(4) in training: 4 weight updates, one per micro-batch, as 4 torch
    steps; OutputMode.All returns the 4 losses."""
    torch.manual_seed(4)
    model = Regress()
    reference = copy.deepcopy(model)
    x, t = _regress_data(8)
    opts = poptorch.Options().deviceIterations(4).outputMode(poptorch.OutputMode.All)
    training = poptorch.trainingModel(model, opts, optimizer=poptorch.optim.SGD(model.parameters(), lr=0.2,
                                                                                momentum=0.9))
    _, losses = training(x, t)
    opt = torch.optim.SGD(reference.parameters(), lr=0.2, momentum=0.9)
    expected = [_torch_step(reference, opt, x[i * 2:(i + 1) * 2], t[i * 2:(i + 1) * 2]) for i in range(4)]
    torch.testing.assert_close(losses, torch.tensor(expected), rtol=1e-5, atol=STEP_ATOL)
    assert _max_diff(training.state_dict(), reference.state_dict()) < STEP_ATOL


# ---------------------------------------------------------------- gradient accumulation, replication

def test_gradient_accumulation_equals_doubled_batch():
    """Training.gradientAccumulation(2): each call is one step whose gradient is the mean
    over the 2 micro-batches, i.e. one torch step over the doubled batch with the mean loss
    (2 calls, SGD with momentum)."""
    torch.manual_seed(5)
    model = Regress()
    reference = copy.deepcopy(model)
    x, t = _regress_data(12)
    opts = poptorch.Options().Training.gradientAccumulation(2)
    training = poptorch.trainingModel(model, opts, optimizer=poptorch.optim.SGD(model.parameters(), lr=0.3,
                                                                                momentum=0.9))
    opt = torch.optim.SGD(reference.parameters(), lr=0.3, momentum=0.9)
    for rows in (slice(0, 6), slice(6, 12)):
        training(x[rows], t[rows])
        _torch_step(reference, opt, x[rows], t[rows])
    assert _max_diff(training.state_dict(), reference.state_dict()) < STEP_ATOL
    # and it is not the same as two steps of 3 rows each (the comparison can fail)
    other = copy.deepcopy(reference)
    opt = torch.optim.SGD(other.parameters(), lr=0.3, momentum=0.9)
    _torch_step(other, opt, x[:3], t[:3])
    assert _max_diff(training.state_dict(), other.state_dict()) > 1e-3


def test_replication_equals_one_replica_on_combined_batch():
    """replicationFactor(2): the replicas' gradients are mean-reduced, so the weights equal
    one replica's (and torch's) step on the combined batch."""
    torch.manual_seed(6)
    model = Regress()
    single, reference = copy.deepcopy(model), copy.deepcopy(model)
    x, t = _regress_data(8)
    replicated = poptorch.trainingModel(model, poptorch.Options().replicationFactor(2),
                                        optimizer=poptorch.optim.SGD(model.parameters(), lr=0.3))
    one = poptorch.trainingModel(single, optimizer=poptorch.optim.SGD(single.parameters(), lr=0.3))
    replicated(x, t)
    one(x, t)
    _torch_step(reference, torch.optim.SGD(reference.parameters(), lr=0.3), x, t)
    assert _max_diff(replicated.state_dict(), one.state_dict()) < STEP_ATOL
    assert _max_diff(replicated.state_dict(), reference.state_dict()) < STEP_ATOL


def test_replication_with_device_iterations_takes_micro_batch_major_rows():
    """replicationFactor(2) x deviceIterations(2): step i uses rows [4i, 4i + 4) of the
    combined batch (both replicas' micro-batches), as the torch steps on those rows."""
    torch.manual_seed(7)
    model = Regress()
    reference = copy.deepcopy(model)
    x, t = _regress_data(8)
    opts = poptorch.Options().replicationFactor(2).deviceIterations(2)
    training = poptorch.trainingModel(model, opts, optimizer=poptorch.optim.SGD(model.parameters(), lr=0.3))
    training(x, t)
    opt = torch.optim.SGD(reference.parameters(), lr=0.3)
    for i in range(2):
        _torch_step(reference, opt, x[4 * i:4 * i + 4], t[4 * i:4 * i + 4])
    assert _max_diff(training.state_dict(), reference.state_dict()) < STEP_ATOL


# ---------------------------------------------------------------- learning rate, weights, detach

# torch warns that the poptorch optimizer, which the device applies, never called step()
@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)` before")
def test_learning_rate_change_between_calls():
    """A change of param_groups' lr, a torch LR scheduler and setOptimizer each take effect
    at the next call, as in the same torch loop."""
    torch.manual_seed(8)
    model = MLP()
    reference = copy.deepcopy(model)
    data = _data(6, 8, seed=8)
    opt_p = poptorch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt_t = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    training = poptorch.trainingModel(model, optimizer=opt_p)
    sched_p = torch.optim.lr_scheduler.StepLR(opt_p, step_size=1, gamma=0.5)
    sched_t = torch.optim.lr_scheduler.StepLR(opt_t, step_size=1, gamma=0.5)
    for i, (x, y) in enumerate(data):
        if i == 1:
            opt_p.param_groups[0]["lr"] = opt_t.param_groups[0]["lr"] = 0.5
        got = float(training(x, y)[1])
        expected = _torch_step(reference, opt_t, x, y)
        assert abs(got - expected) <= LOSS_ATOL + LOSS_RTOL * abs(expected), (i, got, expected)
        if i >= 2:
            sched_p.step()
            sched_t.step()
    assert _max_diff(training.state_dict(), reference.state_dict()) < WEIGHT_ATOL
    # setOptimizer: a new optimizer's lr from the next call (momentum must match)
    before = copy.deepcopy(reference.state_dict())
    training.setOptimizer(poptorch.optim.SGD(model.parameters(), lr=0.0, momentum=0.9))
    for g in opt_t.param_groups:
        g["lr"] = 0.0
    x, y = data[0]
    training(x, y)
    _torch_step(reference, opt_t, x, y)
    assert _max_diff(training.state_dict(), reference.state_dict()) < WEIGHT_ATOL
    assert _max_diff(reference.state_dict(), before) == 0.0


def test_copy_weights_state_dict_and_inference_of_trained_module():
    """copyWeightsToHost puts the device's weights into the module; state_dict() returns
    them; an inferenceModel of the trained module (weights not copied by hand) reads the
    trained weights."""
    torch.manual_seed(9)
    model = MLP()
    reference = copy.deepcopy(model)
    data = _data(3, 8, seed=9)
    training = poptorch.trainingModel(model, optimizer=poptorch.optim.SGD(model.parameters(), lr=0.2))
    opt = torch.optim.SGD(reference.parameters(), lr=0.2)
    for x, y in data:
        training(x, y)
        _torch_step(reference, opt, x, y)
    # inference of the trained module: compiles after syncing the training model's weights
    x, y = _data(1, 8, seed=99)[0]
    logits, loss = poptorch.inferenceModel(model)(x, y)
    with torch.no_grad():
        expected_logits, expected_loss = reference(x, y)
    torch.testing.assert_close(logits, expected_logits, atol=STEP_ATOL, rtol=1e-5)
    torch.testing.assert_close(loss, expected_loss.reshape(1), atol=STEP_ATOL, rtol=1e-5)
    # one more step; then copyWeightsToHost and state_dict
    training(x, y)
    _torch_step(reference, opt, x, y)
    training.copyWeightsToHost()
    assert _max_diff(model.state_dict(), reference.state_dict()) < STEP_ATOL
    state = training.state_dict()
    assert set(state) == set(reference.state_dict())
    assert _max_diff(state, reference.state_dict()) < STEP_ATOL


def test_copy_weights_to_device():
    """copyWeightsToDevice sends the module's (edited) weights to the device."""
    torch.manual_seed(10)
    model = Regress()
    x, t = _regress_data(4)
    training = poptorch.trainingModel(model, optimizer=poptorch.optim.SGD(model.parameters(), lr=0.0))
    training(x, t)
    with torch.no_grad():
        model.fc2.bias.add_(1.0)
    training.copyWeightsToDevice()
    y, _ = training(x, t)
    with torch.no_grad():
        expected, _ = model(x, t)
    torch.testing.assert_close(y, expected, atol=STEP_ATOL, rtol=1e-5)


@pytest.mark.parametrize("kind", ["SGD(momentum=0.9)", "AdamW"])
def test_detach_from_device(kind):
    """detachFromDevice copies the weights to the module and releases the session; the
    next call compiles again from the module's weights and the optimizer state (momentum,
    moments, step count), and training carries on as torch's."""
    torch.manual_seed(11)
    model = Regress()
    reference = copy.deepcopy(model)
    x, t = _regress_data(4, seed=11)
    make = (lambda params, cls: cls(params, lr=0.2, momentum=0.9)) if kind.startswith("SGD") else \
        (lambda params, cls: cls(params, lr=0.05))
    name = kind.split("(")[0]
    training = poptorch.trainingModel(model, optimizer=make(model.parameters(), _POPTORCH[name]))
    opt = make(reference.parameters(), _TORCH[name])
    for _ in range(2):
        training(x, t)
        _torch_step(reference, opt, x, t)
    assert training.isAttachedToDevice()
    training.detachFromDevice()
    assert not training.isAttachedToDevice()
    assert _max_diff(model.state_dict(), reference.state_dict()) < STEP_ATOL
    for _ in range(2):
        training(x, t)
        _torch_step(reference, opt, x, t)
    assert training.isAttachedToDevice()
    assert _max_diff(training.state_dict(), reference.state_dict()) < STEP_ATOL


def test_optimizer_state_offloaded_gives_the_same_weights():
    """TensorLocations.setOptimizerLocation(useOnChipStorage(False)) changes where the
    state lives, not the result."""
    torch.manual_seed(12)
    model = MLP()
    other = copy.deepcopy(model)
    data = _data(3, 8, seed=12)
    opts = poptorch.Options()
    opts.TensorLocations.setOptimizerLocation(poptorch.TensorLocationSettings().useOnChipStorage(False))
    assert opts.offload_optimizer_state
    a = poptorch.trainingModel(model, opts, optimizer=poptorch.optim.AdamW(model.parameters(), lr=0.01))
    b = poptorch.trainingModel(other, optimizer=poptorch.optim.AdamW(other.parameters(), lr=0.01))
    for x, y in data:
        a(x, y)
        b(x, y)
    assert _max_diff(a.state_dict(), b.state_dict()) == 0.0


# ---------------------------------------------------------------- pipelined and sharded

def _stages():
    return [poptorch.Stage(f"B{i + 1}").ipu(i) for i in range(4)]


@pytest.mark.parametrize("strategy", ["pipelined", "sharded", "blocks' ipu_id (default: pipelined)"])
def test_pipelined_and_sharded_equal_one_device(strategy):
    """Four Blocks on four devices (PipelinedExecution / ShardedExecution of four Stages,
    or the Blocks' ipu_id alone) train to bit-identical weights and losses as the same
    model on one device (deviceIterations 2 x gradientAccumulation 4, SGD with momentum,
    2 calls)."""
    torch.manual_seed(13)
    base = FourBlocks(blocks=False)
    x, t = torch.randn(16, 4), torch.randn(16, 4)

    def run(blocks, opts):
        model = copy.deepcopy(base)
        model.blocks = blocks
        training = poptorch.trainingModel(model, opts.deviceIterations(2).Training.gradientAccumulation(4)
                                          .outputMode(poptorch.OutputMode.All),
                                          optimizer=poptorch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9))
        losses = [training(x, t)[1] for _ in range(2)]
        return training.state_dict(), torch.cat(losses)

    opts = poptorch.Options()
    if strategy == "pipelined":
        opts.setExecutionStrategy(poptorch.PipelinedExecution(*_stages()))
    elif strategy == "sharded":
        opts.setExecutionStrategy(poptorch.ShardedExecution(*_stages()))
    split, split_losses = run(True, opts)
    one, one_losses = run(False, poptorch.Options())
    assert _max_diff(split, one) == 0.0
    assert torch.equal(split_losses, one_losses)
    assert _max_diff(one, base.state_dict()) > 1e-3  # it trained


# ---------------------------------------------------------------- DataLoader

def test_dataloader_combined_batch():
    """poptorch.DataLoader's batches are batch_size x deviceIterations x replicas x
    gradientAccumulation rows."""
    opts = poptorch.Options().deviceIterations(3).replicationFactor(2).Training.gradientAccumulation(2)
    data = torch.utils.data.TensorDataset(torch.arange(100.0).reshape(50, 2), torch.arange(50))
    loader = poptorch.DataLoader(opts, data, batch_size=2)
    assert loader.combinedBatchSize == 24
    batches = list(loader)
    assert len(batches) == 2 and tuple(batches[0][0].shape) == (24, 2)
    torch.testing.assert_close(batches[1][1], torch.arange(24, 48))


def test_asynchronous_data_accessor_yields_the_loaders_batches_in_order():
    """The accessor gives the loader's batches, in order, every pass; a dataset error is
    raised by the iteration; terminate() ends an iteration in progress."""
    opts = poptorch.Options().deviceIterations(2)
    data = torch.utils.data.TensorDataset(torch.arange(40.0).reshape(20, 2), torch.arange(20))
    loader = poptorch.DataLoader(opts, data, batch_size=2)
    accessor = poptorch.AsynchronousDataAccessor(loader, buffer_size=1)
    assert len(accessor) == len(loader) == 5
    for _ in range(2):
        got = list(accessor)
        assert [b[1].tolist() for b in got] == [list(range(i, i + 4)) for i in range(0, 20, 4)]

    def failing():
        yield torch.zeros(1)
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"):
        list(poptorch.AsynchronousDataAccessor(failing()))
    endless = poptorch.AsynchronousDataAccessor(iter(lambda: torch.zeros(1), None), buffer_size=2)
    taken = 0
    for _ in endless:
        taken += 1
        if taken == 3:
            endless.terminate()
    assert 3 <= taken <= 3 + 2 + 1  # the batches already loaded, then the end
    with pytest.raises(ValueError, match="buffer_size"):
        poptorch.AsynchronousDataAccessor(loader, buffer_size=0)


# ---------------------------------------------------------------- bad input

class WithLSTM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LSTM(4, 4))

    def forward(self, x):
        return self.encoder(x)  # the LSTM's line


def _alive():
    """The interpreter carries on: a supported model runs and is right."""
    torch.manual_seed(0)
    model = Regress()
    x, t = _regress_data(2)
    y, _ = poptorch.inferenceModel(model)(x, t)
    with torch.no_grad():
        torch.testing.assert_close(y, model(x, t)[0], atol=STEP_ATOL, rtol=1e-5)


def test_unsupported_module_names_type_path_and_line():
    line = next(i for i, text in enumerate(inspect.getsource(WithLSTM).splitlines())
                if "the LSTM's line" in text) + inspect.getsourcelines(WithLSTM)[1]
    with pytest.raises(poptorch.UnsupportedOp) as info:
        poptorch.inferenceModel(WithLSTM())(torch.randn(2, 3, 4))
    message = str(info.value)
    assert "LSTM" in message
    assert "'encoder.1'" in message  # the module path
    assert f'{os.path.basename(__file__)}", line {line}' in message, message
    _alive()


def test_unsupported_function_names_it_and_line():
    class UsesCumsum(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            return torch.cumsum(self.lin(x), 0)

    with pytest.raises(poptorch.UnsupportedOp, match=r"function cumsum .*line \d+, in forward"):
        poptorch.inferenceModel(UsesCumsum())(torch.randn(2, 4))
    _alive()


def test_training_model_without_loss():
    model = torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.ReLU())
    with pytest.raises(ValueError, match="returned no loss"):
        poptorch.trainingModel(model)(torch.randn(2, 4))
    bare = torch.nn.Linear(4, 2)  # a bare module as the model (fx traces its F.linear)
    with pytest.raises(ValueError, match="returned no loss"):
        poptorch.trainingModel(bare)(torch.randn(2, 4))
    x = torch.randn(2, 4)
    torch.testing.assert_close(poptorch.inferenceModel(bare)(x), bare(x).detach(), atol=STEP_ATOL, rtol=1e-5)
    _alive()


def test_batch_not_dividing_into_combined_batch():
    class Named(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 2)

        def forward(self, images):
            return self.lin(images)

    with pytest.raises(ValueError, match=r"input 'images' .*\(6,\).*4 micro-batches"):
        poptorch.inferenceModel(Named(), poptorch.Options().deviceIterations(4))(torch.randn(6, 4))
    _alive()


def test_stage_naming_unknown_block():
    opts = poptorch.Options().setExecutionStrategy(
        poptorch.PipelinedExecution(poptorch.Stage("B1").ipu(0), poptorch.Stage("B2").ipu(1),
                                    poptorch.Stage("B3").ipu(2), poptorch.Stage("B9").ipu(3)))
    model = FourBlocks(blocks=True)
    with pytest.raises(ValueError, match=r"B9"):
        poptorch.trainingModel(model, opts.Training.gradientAccumulation(4))(torch.randn(8, 4), torch.randn(8, 4))
    _alive()


def test_unknown_options():
    with pytest.raises(AttributeError, match="noSuchOption"):
        poptorch.Options().noSuchOption(3)
    with pytest.raises(AttributeError, match="noSuchSetter"):
        poptorch.Options().Training.noSuchSetter(3)
    with pytest.raises(ValueError, match="deviceIterations"):
        poptorch.Options().deviceIterations(0)
    with pytest.raises(ValueError, match="reduction"):
        poptorch.identity_loss(torch.ones(2), "max")
    _alive()


def test_dataloader_with_non_options():
    data = torch.utils.data.TensorDataset(torch.zeros(4, 2))
    with pytest.raises(TypeError, match="poptorch.Options.*dict"):
        poptorch.DataLoader({"deviceIterations": 2}, data)
    _alive()
