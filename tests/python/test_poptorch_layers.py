"""poptorch's pooling, normalisation, embedding and loss layers and torch.max / argmax
against torch (the poptorch issue's missing modules), with poptorch_check's comparison:
the forward of the inference and training models, and one SGD(lr=1) step's parameter
change against torch's -grad, within ATOL + RTOL |torch| (1e-5 + 1e-5 |torch|). BatchNorm
in training mode normalises with the batch statistics, which an inference model does not
(it uses the running ones, as Dropout is off there): those cases compare the training
model only, and test_batch_norm_running_statistics checks the running statistics after 3
steps and the eval-mode inference model after training. `pytest -s` prints the table of
the largest differences (test_difference_table)."""
import copy
import functools

import pytest
import torch
import torch.nn.functional as F

poptorch = pytest.importorskip("poptorch")
from poptorch_check import (ATOL, RTOL, ConvThen, LinMod, Loss, Weighted, compare, compare_outputs,  # noqa: E402
                            max_rel_excess, weighted, worst)


def _x(*shape):
    return torch.randn(*shape)


def _randomised(module):
    """`module` with random parameters and running statistics (not the identity init)."""
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * 0.5 + (1.0 if p.dim() == 1 else 0.0))
        for name in ("running_mean", "running_var"):
            buffer = getattr(module, name, None)
            if buffer is not None:
                buffer.copy_(torch.rand_like(buffer) + (0.5 if name == "running_var" else -0.5))
    return module


def _eval(module):
    return _randomised(module).eval()


class MaxIndices(torch.nn.Module):
    """torch.max(y, 1) (values, indices), torch.argmax and y.max(-1) of a Linear's output."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(6, 5)

    def forward(self, x, w):
        y = self.lin(x)
        both = torch.max(y, 1)  # fx cannot unpack a traced tuple
        values, indices = both[0], both[1]
        kept = y.max(-1, keepdim=True)[0]
        loss = (values * w).sum() + (kept * kept).sum() + torch.max(y)
        return indices, torch.argmax(y, dim=1), y.argmax(-1), poptorch.identity_loss(loss, "none")


class PoolIndices(torch.nn.Module):
    """A conv, then `pool` (a MaxPool2d with return_indices): the loss weights the pooled
    output by w [N, 1, 1, 1], the indices are returned."""

    def __init__(self, pool):
        super().__init__()
        self.conv, self.pool = torch.nn.Conv2d(2, 2, 3, padding=1), pool

    def forward(self, x, w):
        both = self.pool(self.conv(x))  # fx cannot unpack a traced tuple
        return both[1], poptorch.identity_loss((both[0] * w).sum(), "none")


def _frozen_padded():
    """An Embedding with padding_idx 0 (random row 0) and a frozen weight."""
    embedding = torch.nn.Embedding(10, 4, padding_idx=0)
    with torch.no_grad():
        embedding.weight[0] = torch.randn(4)
    return embedding.requires_grad_(False)


class Reshaped(torch.nn.Module):
    """A Linear (6 -> prod(shape)), its output reshaped to [N] + shape, then the module `op`."""

    def __init__(self, op, shape):
        super().__init__()
        self.lin = torch.nn.Linear(6, int(torch.Size(shape).numel()))
        self.op, self.shape = op, tuple(shape)

    def forward(self, x):
        return self.op(self.lin(x).reshape((x.size(0),) + self.shape))


class MapLoss(torch.nn.Module):
    """y = Linear(x) as [N, 5, 3] (5 classes at 3 positions), loss = `loss`(y, target [N, 3])."""

    def __init__(self, loss):
        super().__init__()
        self.lin = torch.nn.Linear(6, 15)
        self.loss = loss

    def forward(self, x, target):
        y = self.lin(x).reshape(x.size(0), 5, 3)
        return y, self.loss(y, target)


def _map_labels(n, ignored=()):
    labels = torch.randint(0, 5, (n, 3))
    for i, j in ignored:
        labels[i, j] = -100
    return labels


def _labels(n, classes, ignored=()):
    labels = torch.randint(0, classes, (n,))
    labels[list(ignored)] = -100
    return labels


# name -> (model factory, input factory, kind): kind "weighted" wraps the module in Weighted
# (inputs x and a weight of the output's shape), "target" feeds the model's own inputs;
# "training" means a module in training mode (compared through the training model only).
CASES = {
    "AvgPool2d(2)": (lambda: ConvThen(torch.nn.AvgPool2d(2)), lambda: _x(2, 2, 6, 6), "weighted"),
    "AvgPool2d(3, stride 2, padding 1)": (lambda: ConvThen(torch.nn.AvgPool2d(3, stride=2, padding=1)),
                                          lambda: _x(2, 2, 7, 7), "weighted"),
    "AvgPool2d(3, 2, 1, count_include_pad=False)": (
        lambda: ConvThen(torch.nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)),
        lambda: _x(2, 2, 7, 8), "weighted"),
    "AvgPool2d((2, 3), stride (1, 2))": (lambda: ConvThen(torch.nn.AvgPool2d((2, 3), stride=(1, 2))),
                                         lambda: _x(2, 2, 5, 7), "weighted"),
    "AvgPool2d(2, ceil_mode) of 5x5": (lambda: ConvThen(torch.nn.AvgPool2d(2, ceil_mode=True)),
                                       lambda: _x(2, 2, 5, 5), "weighted"),
    "AvgPool2d(3, 2, 1, ceil_mode) of 6x6": (lambda: ConvThen(torch.nn.AvgPool2d(3, 2, 1, ceil_mode=True)),
                                             lambda: _x(2, 2, 6, 6), "weighted"),
    "AvgPool2d(3, 2, 1, ceil_mode, count_include_pad=False) of 6x7": (
        lambda: ConvThen(torch.nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False)),
        lambda: _x(2, 2, 6, 7), "weighted"),
    "AvgPool2d(2, divisor_override=3)": (lambda: ConvThen(torch.nn.AvgPool2d(2, divisor_override=3)),
                                         lambda: _x(2, 2, 6, 6), "weighted"),
    "MaxPool2d(2, ceil_mode) of 5x5": (lambda: ConvThen(torch.nn.MaxPool2d(2, ceil_mode=True)),
                                       lambda: _x(2, 2, 5, 5), "weighted"),
    "MaxPool2d(3, 2, 1, ceil_mode) of 6x7": (lambda: ConvThen(torch.nn.MaxPool2d(3, 2, 1, ceil_mode=True)),
                                             lambda: _x(2, 2, 6, 7), "weighted"),
    "MaxPool2d(2, 2, 1, ceil_mode) of 5x6 (no window starts past the input)": (
        lambda: ConvThen(torch.nn.MaxPool2d(2, 2, 1, ceil_mode=True)), lambda: _x(2, 2, 5, 6), "weighted"),
    "MaxPool2d(3, 1, 1, dilation 2) of 7x7": (lambda: ConvThen(torch.nn.MaxPool2d(3, 1, 1, dilation=2)),
                                              lambda: _x(2, 2, 7, 7), "weighted"),
    "MaxPool2d((2, 3), 2, dilation (2, 1), ceil_mode) of 6x7": (
        lambda: ConvThen(torch.nn.MaxPool2d((2, 3), 2, dilation=(2, 1), ceil_mode=True)), lambda: _x(2, 2, 6, 7),
        "weighted"),
    "AdaptiveAvgPool2d((1, 1))": (lambda: ConvThen(torch.nn.AdaptiveAvgPool2d((1, 1))), lambda: _x(2, 2, 5, 6),
                                  "weighted"),
    "AdaptiveAvgPool2d((2, 3)) of 6x6": (lambda: ConvThen(torch.nn.AdaptiveAvgPool2d((2, 3))),
                                         lambda: _x(2, 2, 6, 6), "weighted"),
    "BatchNorm2d (train)": (lambda: ConvThen(_randomised(torch.nn.BatchNorm2d(3))), lambda: _x(4, 2, 5, 5),
                            "training"),
    "BatchNorm2d(affine=False) (train)": (lambda: ConvThen(torch.nn.BatchNorm2d(3, affine=False)),
                                          lambda: _x(4, 2, 5, 5), "training"),
    "BatchNorm2d (eval)": (lambda: ConvThen(_eval(torch.nn.BatchNorm2d(3))), lambda: _x(4, 2, 5, 5), "weighted"),
    "BatchNorm1d [N, C] (train)": (lambda: LinMod(_randomised(torch.nn.BatchNorm1d(6))), lambda: _x(8, 6),
                                   "training"),
    "BatchNorm1d [N, C, L] (train)": (lambda: Reshaped(_randomised(torch.nn.BatchNorm1d(3)), (3, 4)),
                                      lambda: _x(4, 6), "training"),
    "BatchNorm1d (eval)": (lambda: LinMod(_eval(torch.nn.BatchNorm1d(6))), lambda: _x(8, 6), "weighted"),
    "BatchNorm1d(track_running_stats=False)": (
        lambda: LinMod(_randomised(torch.nn.BatchNorm1d(6, track_running_stats=False))), lambda: _x(8, 6),
        "weighted"),
    "LayerNorm(6)": (lambda: LinMod(_randomised(torch.nn.LayerNorm(6))), lambda: _x(2, 3, 6), "weighted"),
    "LayerNorm(6, elementwise_affine=False)": (lambda: LinMod(torch.nn.LayerNorm(6, elementwise_affine=False)),
                                               lambda: _x(5, 6), "weighted"),
    "LayerNorm((3, 4)) of [N, 3, 4]": (lambda: Reshaped(_randomised(torch.nn.LayerNorm((3, 4))), (3, 4)),
                                       lambda: _x(2, 6), "weighted"),
    "GroupNorm(3, 6)": (lambda: ConvThen(_randomised(torch.nn.GroupNorm(3, 6)), c_out=6), lambda: _x(2, 2, 4, 5),
                        "weighted"),
    "GroupNorm(2, 8, affine=False), [N, C]": (lambda: LinMod(torch.nn.GroupNorm(2, 8, affine=False), n_out=8),
                                              lambda: _x(3, 6), "weighted"),
    "Embedding(10, 4)": (lambda: torch.nn.Embedding(10, 4), lambda: torch.randint(0, 10, (3, 5)), "weighted"),
    "Embedding(10, 4, padding_idx=0) frozen, Linear": (
        lambda: torch.nn.Sequential(_frozen_padded(), torch.nn.Linear(4, 3)),
        lambda: torch.tensor([[0, 3, 3, 9], [1, 0, 0, 2]]), "weighted"),
    "Embedding(10, 4, padding_idx=2), trainable": (
        lambda: _randomised(torch.nn.Embedding(10, 4, padding_idx=2)),
        lambda: torch.tensor([[2, 3, 3, 9], [1, 2, 2, 0]]), "weighted"),
    "NLLLoss": (lambda: Loss(torch.nn.NLLLoss()), lambda: (_x(6, 6), _labels(6, 5)), "target"),
    "NLLLoss (ignore_index)": (lambda: Loss(torch.nn.NLLLoss()), lambda: (_x(6, 6), _labels(6, 5, (1, 4))),
                               "target"),
    "NLLLoss(reduction='sum')": (lambda: Loss(torch.nn.NLLLoss(reduction="sum")),
                                 lambda: (_x(6, 6), _labels(6, 5)), "target"),
    "F.nll_loss(F.log_softmax(y, 1))": (lambda: Loss(lambda y, t: F.nll_loss(F.log_softmax(y, 1), t)),
                                        lambda: (_x(6, 6), _labels(6, 5)), "target"),
    "BCEWithLogitsLoss": (lambda: Loss(torch.nn.BCEWithLogitsLoss()), lambda: (_x(4, 6), torch.rand(4, 5)),
                          "target"),
    "BCEWithLogitsLoss(reduction='sum')": (lambda: Loss(torch.nn.BCEWithLogitsLoss(reduction="sum")),
                                           lambda: (_x(4, 6), torch.rand(4, 5)), "target"),
    "F.binary_cross_entropy_with_logits": (lambda: Loss(F.binary_cross_entropy_with_logits),
                                           lambda: (_x(4, 6), (torch.rand(4, 5) > 0.5).float()), "target"),
    "CrossEntropyLoss(weight, ignore_index)": (
        lambda: Loss(torch.nn.CrossEntropyLoss(weight=torch.rand(5) + 0.5)), lambda: (_x(6, 6), _labels(6, 5, (2,))),
        "target"),
    "CrossEntropyLoss(label_smoothing=0.1)": (lambda: Loss(torch.nn.CrossEntropyLoss(label_smoothing=0.1)),
                                              lambda: (_x(6, 6), _labels(6, 5)), "target"),
    "CrossEntropyLoss(weight, label_smoothing=0.2, ignore_index)": (
        lambda: Loss(torch.nn.CrossEntropyLoss(weight=torch.rand(5) + 0.5, label_smoothing=0.2)),
        lambda: (_x(6, 6), _labels(6, 5, (0, 3))), "target"),
    "CrossEntropyLoss(reduction='sum')": (lambda: Loss(torch.nn.CrossEntropyLoss(reduction="sum")),
                                          lambda: (_x(6, 6), _labels(6, 5)), "target"),
    "F.cross_entropy(reduction='none').sum()": (
        lambda: Loss(lambda y, t: F.cross_entropy(y, t, reduction="none").sum()), lambda: (_x(6, 6), _labels(6, 5)),
        "target"),
    "CrossEntropyLoss of [N, C, 3]": (lambda: MapLoss(torch.nn.CrossEntropyLoss()),
                                      lambda: (_x(4, 6), _map_labels(4, [(1, 2)])), "target"),
    "CrossEntropyLoss(weight, label_smoothing=0.1) of [N, C, 3]": (
        lambda: MapLoss(torch.nn.CrossEntropyLoss(weight=torch.rand(5) + 0.5, label_smoothing=0.1)),
        lambda: (_x(4, 6), _map_labels(4, [(0, 0)])), "target"),
    "F.nll_loss(reduction='none').sum() of [N, C, 3]": (
        lambda: MapLoss(lambda y, t: F.nll_loss(F.log_softmax(y, 1), t, reduction="none").sum()),
        lambda: (_x(4, 6), _map_labels(4, [(2, 1)])), "target"),
    "NLLLoss(weight, ignore_index)": (lambda: Loss(torch.nn.NLLLoss(weight=torch.rand(5) + 0.5)),
                                      lambda: (_x(6, 6), _labels(6, 5, (1,))), "target"),
    "NLLLoss(weight, reduction='sum')": (lambda: Loss(torch.nn.NLLLoss(weight=torch.rand(5) + 0.5, reduction="sum")),
                                         lambda: (_x(6, 6), _labels(6, 5)), "target"),
    "BCEWithLogitsLoss(pos_weight)": (lambda: Loss(torch.nn.BCEWithLogitsLoss(pos_weight=torch.rand(5) * 3)),
                                      lambda: (_x(4, 6), torch.rand(4, 5)), "target"),
    "BCEWithLogitsLoss(weight [4, 1], pos_weight, reduction='sum')": (
        lambda: Loss(torch.nn.BCEWithLogitsLoss(weight=torch.rand(4, 1), pos_weight=torch.rand(5) * 3,
                                                reduction="sum")),
        lambda: (_x(4, 6), (torch.rand(4, 5) > 0.5).float()), "target"),
    "torch.max(y, 1), .max(-1, keepdim), torch.max(y), argmax": (MaxIndices, lambda: (_x(5, 6), _x(5)),
                                                                 "target"),
    "MaxPool2d(2, return_indices)": (lambda: PoolIndices(torch.nn.MaxPool2d(2, return_indices=True)),
                                     lambda: (_x(2, 2, 6, 6), _x(2, 1, 1, 1)), "target"),
    "MaxPool2d(3, 2, 1, ceil_mode, return_indices) of 6x7": (
        lambda: PoolIndices(torch.nn.MaxPool2d(3, 2, 1, ceil_mode=True, return_indices=True)),
        lambda: (_x(2, 2, 6, 7), _x(2, 1, 1, 1)), "target"),
    "MaxPool2d((2, 3), 2, dilation (2, 1), return_indices) of 6x7": (
        lambda: PoolIndices(torch.nn.MaxPool2d((2, 3), 2, dilation=(2, 1), return_indices=True)),
        lambda: (_x(2, 2, 6, 7), _x(2, 1, 1, 1)), "target"),
}


@functools.lru_cache(maxsize=None)
def result(name):
    """{"forward": (max diff, ok), "gradient": (max diff, ok)} of CASES[name], computed once."""
    factory, make_inputs, kind = CASES[name]
    torch.manual_seed(sum(map(ord, name)))
    body = factory()
    if kind == "target":
        return compare(body, make_inputs())
    model, inputs = weighted(body, make_inputs())
    return compare(model, inputs, inference=kind != "training")


@pytest.mark.parametrize("name", list(CASES))
def test_forward_and_gradient_match_torch(name):
    r = result(name)
    assert r["forward"][1], f"{name}: forward differs from torch by {r['forward'][0]:.3g}"
    assert r["gradient"][1], f"{name}: gradient differs from torch's autograd by {r['gradient'][0]:.3g}"


def _bn_model(kind, momentum):
    """(model, input shape, output shape): a Conv2d then BatchNorm2d, or a Linear then BatchNorm1d."""
    torch.manual_seed(11)
    if kind == "2d":
        return Weighted(ConvThen(_randomised(torch.nn.BatchNorm2d(3, momentum=momentum)))), (2, 2, 5, 5), (2, 3, 5, 5)
    return Weighted(LinMod(_randomised(torch.nn.BatchNorm1d(6, momentum=momentum)))), (8, 6), (8, 6)


@functools.lru_cache(maxsize=None)
def batch_norm_steps(kind, momentum):
    """(max difference, all within tolerance) of 3 SGD(lr=0.1) training steps of a BatchNorm
    model against torch's: the outputs of each step, then the parameters and running
    statistics, then the eval-mode inference model after training."""
    model, shape, out_shape = _bn_model(kind, momentum)
    ref = copy.deepcopy(model)
    reference = torch.optim.SGD(ref.parameters(), lr=0.1)
    training = poptorch.trainingModel(model, optimizer=poptorch.optim.SGD(model.parameters(), lr=0.1))
    diffs = []
    for _ in range(3):
        x, w = torch.randn(shape), torch.randn(out_shape)
        reference.zero_grad()
        expected = ref(x, w)
        expected[-1].backward()
        reference.step()
        diffs += compare_outputs(training(x, w), expected)
    training.copyWeightsToHost()
    state, expected_state = model.state_dict(), ref.state_dict()
    assert set(state) == set(expected_state)
    diffs += [max_rel_excess(state[k].double(), expected_state[k].double()) for k in state]
    assert int(state["body.op.num_batches_tracked"]) == 3
    training.detachFromDevice()
    x, w = torch.randn(shape), torch.randn(out_shape)
    ref.eval(), model.eval()
    with torch.no_grad():
        expected = ref(x, w)
    inference = poptorch.inferenceModel(model)
    diffs += compare_outputs(inference(x, w), expected)
    inference.detachFromDevice()
    return worst(diffs)


@pytest.mark.parametrize("kind", ["2d", "1d"])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_running_statistics(kind, momentum):
    """Running mean and (unbiased) variance and num_batches_tracked after 3 training steps
    match torch's (momentum None: the cumulative average), and so does the eval-mode
    inference model with them."""
    diff, ok = batch_norm_steps(kind, momentum)
    assert ok, f"BatchNorm{kind}(momentum={momentum}) differs from torch by {diff:.3g}"


class Renormed(torch.nn.Module):
    """An Embedding(12, 5, max_norm=1.5) whose rows have norms of about 2 to 9, then a
    Linear, summed over the sequence; the MSE loss. Indices come from rows 0-7 only."""

    def __init__(self, norm_type, functional):
        super().__init__()
        self.emb = torch.nn.Embedding(12, 5, max_norm=1.5, norm_type=norm_type)
        with torch.no_grad():
            self.emb.weight.mul_(2.0)
        self.lin, self.functional = torch.nn.Linear(5, 3), functional

    def forward(self, idx, t):
        e = (F.embedding(idx, self.emb.weight, max_norm=1.5, norm_type=self.emb.norm_type) if self.functional
             else self.emb(idx))
        y = self.lin(e).sum(1)
        return y, F.mse_loss(y, t)


def max_norm_steps(norm_type, functional=False, steps=4):
    """(largest difference, within tolerance) of outputs and loss at each of `steps` SGD
    steps and of the weights after them, poptorch against torch, for Renormed; indices
    [4, 7] with repeats in a row and across rows. Rows 8-11, never read, keep their norms
    above max_norm (checked: only the rows read are renormalised)."""
    torch.manual_seed(0)
    model = Renormed(norm_type, functional)
    ref = copy.deepcopy(model)
    unread = model.emb.weight[8:].detach().clone()
    opt = torch.optim.SGD(ref.parameters(), lr=0.05)
    trained = poptorch.trainingModel(model, optimizer=poptorch.optim.SGD(model.parameters(), lr=0.05))
    diffs = []
    for _ in range(steps):
        idx = torch.randint(0, 8, (4, 7))
        idx[:, 1] = idx[:, 0]
        idx[1] = idx[0]
        t = torch.randn(4, 3)
        opt.zero_grad()
        expected = ref(idx, t)
        expected[1].backward()
        opt.step()
        diffs += compare_outputs(trained(idx, t), expected)
    trained.copyWeightsToHost()
    diffs += [max_rel_excess(p, q) for p, q in zip(model.parameters(), ref.parameters())]
    assert torch.equal(model.emb.weight[8:], unread) and torch.equal(ref.emb.weight[8:], unread)
    return worst(diffs)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0])
@pytest.mark.parametrize("functional", [False, True])
def test_embedding_max_norm_training_matches_torch(norm_type, functional):
    """Embedding(max_norm) renormalises the rows read in the weight during the forward,
    not differentiated, as torch: outputs and loss of 4 SGD steps and the weights after
    them within ATOL + RTOL |torch| (norm_type 3's norm is (sum |w|^3)^(1/3) through exp
    and log), through the module and through F.embedding."""
    diff, ok = max_norm_steps(norm_type, functional)
    assert ok, f"Embedding(max_norm, norm_type={norm_type}) differs from torch by {diff:.3g}"


@pytest.mark.parametrize("module, shape", [
    (torch.nn.AdaptiveAvgPool2d((4, 4)), (2, 2, 6, 6)),
    (torch.nn.Embedding(10, 4, scale_grad_by_freq=True), None),
])
def test_unsupported_variant_names_the_module(module, shape):
    """UnsupportedOp naming the module (Sequential: a leaf module, not a traced forward)."""
    x = torch.randint(0, 10, (2, 3)) if shape is None else torch.randn(shape)
    with pytest.raises(poptorch.UnsupportedOp, match=type(module).__name__):
        poptorch.inferenceModel(torch.nn.Sequential(module))(x)


def test_difference_table():
    """Prints the largest forward and gradient difference of every case (pytest -s)."""
    rows = [(name, result(name)) for name in CASES]
    width = max(len(n) for n, _ in rows)
    lines = [f"{'case':<{width}}  {'max |fwd diff|':>14}  {'max |grad diff|':>15}  "
             f"(tolerance {ATOL:g} + {RTOL:g}|torch|)"]
    lines += [f"{name:<{width}}  {r['forward'][0]:>14.3e}  {r['gradient'][0]:>15.3e}" for name, r in rows]
    lines += [f"{f'BatchNorm{k}(momentum={m}), 3 steps + eval':<{width}}  {batch_norm_steps(k, m)[0]:>14.3e}"
              for k in ("2d", "1d") for m in (0.1, None)]
    lines += [f"{f'Embedding(max_norm=1.5, norm_type={p:g}), 4 steps':<{width}}  {max_norm_steps(p)[0]:>14.3e}"
              for p in (2.0, 1.0, 3.0)]
    print("\n" + "\n".join(lines))
    assert not [n for n, r in rows if not (r["forward"][1] and r["gradient"][1])]
