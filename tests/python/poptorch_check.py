"""Shared helpers of the poptorch comparison suites (test_poptorch_modules.py,
test_poptorch_layers.py): a model's forward and gradients on poptorch against torch on the
same inputs. The forward is poptorch.inferenceModel(model)(*inputs) and the training
model's outputs against model(*inputs); the gradients are the parameter change of one
poptorch.trainingModel step of poptorch.optim.SGD(lr=1.0), which is -grad, against torch's
autograd on a copy of the module. Parameter-free ops sit after a Linear or Conv2d so that
their gradient reaches a parameter.

Tolerance: |poptorch - torch| <= ATOL + RTOL * |torch| elementwise."""
import copy

import torch

import poptorch

ATOL = 1e-5
RTOL = 1e-5


def max_rel_excess(a, b):
    """(max |a - b|, whether |a - b| <= ATOL + RTOL |b| everywhere)."""
    a, b = a.detach().double(), b.detach().double()
    assert a.shape == b.shape, (a.shape, b.shape)
    d = (a - b).abs()
    return float(d.max()) if d.numel() else 0.0, bool((d <= ATOL + RTOL * b.abs()).all())


def worst(pairs):
    """(largest difference, all within tolerance) of max_rel_excess results."""
    pairs = list(pairs)
    return max((d for d, _ in pairs), default=0.0), all(ok for _, ok in pairs)


def leaves(x):
    if isinstance(x, (tuple, list)):
        for v in x:
            yield from leaves(v)
    elif x is not None:
        yield x


def compare_outputs(got, expected):
    """max_rel_excess of each pair of leaves (poptorch's reshaped to torch's shape)."""
    return [max_rel_excess(g.reshape(e.shape), e) for g, e in zip(leaves(got), leaves(expected))]


class Weighted(torch.nn.Module):
    """y = body(x) and the scalar loss sum(y * w) (poptorch.identity_loss "none"): its
    gradient reaches the body's parameters through the op under test."""

    def __init__(self, body):
        super().__init__()
        self.body = body

    def forward(self, x, w):
        y = self.body(x)
        return y, poptorch.identity_loss((y * w).sum(), "none")


def weighted(body, x):
    """(Weighted(body), (x, a random weight of body(x)'s shape))."""
    with torch.no_grad():
        y0 = body(x)
    return Weighted(body), (x, torch.randn_like(y0))


class Lin(torch.nn.Module):
    """A Linear, then `fn` (a parameter-free op)."""

    def __init__(self, fn, n_in=6, n_out=6):
        super().__init__()
        self.lin = torch.nn.Linear(n_in, n_out)
        self.fn = fn

    def forward(self, x):
        return self.fn(self.lin(x))


class LinMod(torch.nn.Module):
    """A Linear, then the module `op`."""

    def __init__(self, op, n_in=6, n_out=6):
        super().__init__()
        self.lin = torch.nn.Linear(n_in, n_out)
        self.op = op

    def forward(self, x):
        return self.op(self.lin(x))


class ConvThen(torch.nn.Module):
    """A Conv2d (3x3, padding 1), then the module or function `op`."""

    def __init__(self, op, c_in=2, c_out=3):
        super().__init__()
        self.conv = torch.nn.Conv2d(c_in, c_out, 3, padding=1)
        self.op = op

    def forward(self, x):
        return self.op(self.conv(x))


class Loss(torch.nn.Module):
    """y = Linear(x), loss = `loss`(y, target): the loss module's own gradient."""

    def __init__(self, loss, n_in=6, n_out=5):
        super().__init__()
        self.lin = torch.nn.Linear(n_in, n_out)
        self.loss = loss

    def forward(self, x, target):
        y = self.lin(x)
        return y, self.loss(y, target)


def torch_reference(model, inputs, reference=None):
    """(outputs, {param name: grad}) of torch on a copy of `model` (its own mode);
    `reference` (optional) turns the copy into the form Plexus computes."""
    ref = copy.deepcopy(model)
    if reference is not None:
        ref = reference(ref)
    outputs = ref(*inputs)
    loss = list(leaves(outputs))[-1]
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in ref.named_parameters() if p.requires_grad}
    return outputs, grads


def sgd_step(model, inputs):
    """(outputs, {param name: -grad}, the trained executor) of one poptorch.trainingModel step
    of SGD(lr=1) on `model` (changed in place); the caller detaches the executor."""
    before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    training = poptorch.trainingModel(model, optimizer=poptorch.optim.SGD(model.parameters(), lr=1.0))
    got = training(*inputs)
    after = training.state_dict()
    return got, {n: after[n] - before[n] for n in before}, training


def compare(model, inputs, reference=None, inference=True):
    """{"forward": (max diff, ok), "gradient": (max diff, ok)} of `model` on `inputs`: the
    inference model's outputs (unless `inference` is False) and the training model's
    against torch's forward, one SGD(lr=1) step's parameter change against -grad."""
    expected, grads = torch_reference(model, inputs, reference)
    fwd = []
    if inference:
        executor = poptorch.inferenceModel(copy.deepcopy(model))
        fwd += compare_outputs(executor(*inputs), expected)
        executor.detachFromDevice()
    got, steps, training = sgd_step(copy.deepcopy(model), inputs)
    training.detachFromDevice()
    fwd += compare_outputs(got, expected)
    assert set(grads) == set(steps)
    return {"forward": worst(fwd), "gradient": worst(max_rel_excess(-steps[n], grads[n]) for n in grads)}
