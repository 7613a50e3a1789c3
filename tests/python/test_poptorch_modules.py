"""poptorch's lowered modules, functions and tensor methods against torch on the same inputs:
the forward (poptorch.inferenceModel(model)(x) and the training model's outputs against
model(x)) and the gradients (the parameter change of one poptorch.trainingModel step of
poptorch.optim.SGD(lr=1.0), which is -grad, against torch's autograd on a copy of the
module). Parameter-free ops sit after a Linear or Conv2d so that their gradient reaches
a parameter. `pytest -s` prints the table of the largest differences (test_difference_table).

Tolerance: |poptorch - torch| <= ATOL + RTOL * |torch| elementwise, ATOL = RTOL = 1e-5,
for the forward and for the gradients. GELU is compared to torch's approximate="tanh"
form (Plexus's gelu is the tanh approximation) with the same tolerance; its gap to the
exact form is recorded as its own row and only bounded by 1e-3."""
import copy
import functools

import pytest
import torch
import torch.nn.functional as F

poptorch = pytest.importorskip("poptorch")
from poptorch_check import ATOL, RTOL, ConvThen, Lin, LinMod, Loss, Weighted, compare, weighted  # noqa: E402

GELU_EXACT_GAP = 1e-3  # bound on |Plexus gelu (tanh form) - torch's exact gelu| (docs: about 5e-4)


class TwoLin(torch.nn.Module):
    """Two Linears of x and `fn(a, b)` of their outputs (binary ops: both operands carry
    gradients)."""

    def __init__(self, fn, n_in=6, n_a=6, n_b=6):
        super().__init__()
        self.a = torch.nn.Linear(n_in, n_a)
        self.b = torch.nn.Linear(n_in, n_b)
        self.fn = fn

    def forward(self, x):
        return self.fn(self.a(x), self.b(x))


class ParamMatmul(torch.nn.Module):
    """Linear(x) @ P with a bare Parameter P (a get_attr node) and `op` the spelling."""

    def __init__(self, op):
        super().__init__()
        self.lin = torch.nn.Linear(6, 4)
        self.p = torch.nn.Parameter(torch.randn(4, 3))
        self.op = op

    def forward(self, x):
        return self.op(self.lin(x), self.p)


class IdentityLoss(torch.nn.Module):
    def __init__(self, reduction):
        super().__init__()
        self.lin = torch.nn.Linear(6, 4)
        self.reduction = reduction

    def forward(self, x, w):
        y = self.lin(x)
        if self.reduction == "none":
            return y, poptorch.identity_loss((y * w).sum(), "none")
        return y, poptorch.identity_loss(y * w, self.reduction)


def _x(*shape):
    return torch.randn(*shape)


def _perm(y):
    return y.permute(0, 2, 1)


def _tanh_gelu(model):
    """The torch reference of a LinMod(GELU()): torch's tanh form, which Plexus computes."""
    model.body.op = torch.nn.GELU(approximate="tanh")
    return model


# name -> (module factory, input factory, loss kind[, reference]): kind "weighted" wraps the
# module in Weighted (input x and a weight w of the output's shape); "target" feeds the
# module (x, target) and it returns (y, loss) itself. `reference` (optional) turns the
# copy torch runs into the form Plexus computes.
CASES = {
    "Linear": (lambda: torch.nn.Linear(6, 4), lambda: _x(4, 6), "weighted"),
    "Linear (no bias, rank 3)": (lambda: torch.nn.Linear(6, 4, bias=False), lambda: _x(3, 2, 6), "weighted"),
    "Conv2d (k3, stride 2, padding 1)": (lambda: torch.nn.Conv2d(2, 3, 3, stride=2, padding=1),
                                         lambda: _x(2, 2, 7, 7), "weighted"),
    "Conv2d (k(2,3), stride (1,2), padding (0,1))": (
        lambda: torch.nn.Conv2d(3, 2, (2, 3), stride=(1, 2), padding=(0, 1)), lambda: _x(2, 3, 5, 6), "weighted"),
    "Conv2d (k3, dilation 2, padding 2)": (lambda: torch.nn.Conv2d(2, 3, 3, dilation=2, padding=2),
                                           lambda: _x(2, 2, 7, 7), "weighted"),
    "Conv2d (groups 2, dilation (1, 2), padding 1)": (
        lambda: torch.nn.Conv2d(4, 6, 3, groups=2, dilation=(1, 2), padding=1), lambda: _x(2, 4, 6, 7), "weighted"),
    "Conv2d (depthwise: groups 3, stride 2, no bias)": (
        lambda: torch.nn.Conv2d(3, 3, 3, groups=3, stride=2, bias=False), lambda: _x(2, 3, 7, 7), "weighted"),
    "Conv2d (padding 'same', k(2, 3), dilation (1, 2): odd total at the bottom)": (
        lambda: torch.nn.Conv2d(2, 3, (2, 3), padding="same", dilation=(1, 2)), lambda: _x(2, 2, 5, 6), "weighted"),
    "Conv2d (padding 2, padding_mode 'reflect')": (lambda: torch.nn.Conv2d(2, 3, 3, padding=2, padding_mode="reflect"),
                                                   lambda: _x(2, 2, 5, 6), "weighted"),
    "Conv2d (padding (1, 2), padding_mode 'replicate', stride 2)": (
        lambda: torch.nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="replicate", stride=2), lambda: _x(2, 2, 5, 6),
        "weighted"),
    "Conv2d (padding 'same', k4, padding_mode 'circular')": (
        lambda: torch.nn.Conv2d(2, 3, 4, padding="same", padding_mode="circular"), lambda: _x(2, 2, 5, 6), "weighted"),
    "Conv2d (padding 'same', k(2, 3), padding_mode 'reflect')": (
        lambda: torch.nn.Conv2d(2, 3, (2, 3), padding="same", padding_mode="reflect"), lambda: _x(2, 2, 3, 4),
        "weighted"),
    "Conv2d (padding 'valid')": (lambda: torch.nn.Conv2d(2, 3, 3, padding="valid"), lambda: _x(2, 2, 5, 6),
                                 "weighted"),
    "MaxPool2d(2)": (lambda: ConvThen(torch.nn.MaxPool2d(2)), lambda: _x(2, 2, 6, 6), "weighted"),
    "MaxPool2d(3, stride 2, padding 1)": (lambda: ConvThen(torch.nn.MaxPool2d(3, stride=2, padding=1)),
                                          lambda: _x(2, 2, 7, 7), "weighted"),
    "ReLU": (lambda: LinMod(torch.nn.ReLU()), lambda: _x(5, 6), "weighted"),
    "Tanh": (lambda: LinMod(torch.nn.Tanh()), lambda: _x(5, 6), "weighted"),
    "Sigmoid": (lambda: LinMod(torch.nn.Sigmoid()), lambda: _x(5, 6), "weighted"),
    "GELU() (vs torch's tanh form)": (lambda: LinMod(torch.nn.GELU()), lambda: _x(5, 6), "weighted", _tanh_gelu),
    "GELU(approximate='tanh')": (lambda: LinMod(torch.nn.GELU(approximate="tanh")), lambda: _x(5, 6), "weighted"),
    "F.gelu(approximate='tanh')": (lambda: Lin(lambda y: F.gelu(y, approximate="tanh")), lambda: _x(5, 6),
                                   "weighted"),
    "Softmax(dim=1)": (lambda: LinMod(torch.nn.Softmax(dim=1)), lambda: _x(5, 6), "weighted"),
    "y * y.detach()": (lambda: Lin(lambda y: y * y.detach()), lambda: _x(5, 6), "weighted"),
    "Softmax(dim=-1), rank 3": (lambda: LinMod(torch.nn.Softmax(dim=-1)), lambda: _x(2, 3, 6), "weighted"),
    "LogSoftmax(dim=1)": (lambda: LinMod(torch.nn.LogSoftmax(dim=1)), lambda: _x(5, 6), "weighted"),
    "Flatten": (lambda: ConvThen(torch.nn.Flatten()), lambda: _x(2, 2, 3, 4), "weighted"),
    "Flatten(1, 2)": (lambda: ConvThen(torch.nn.Flatten(1, 2)), lambda: _x(2, 2, 3, 4),
                                          "weighted"),
    "Dropout (eval: identity)": (lambda: LinMod(torch.nn.Dropout(0.5)).eval(), lambda: _x(5, 6), "weighted"),
    "CrossEntropyLoss": (lambda: Loss(torch.nn.CrossEntropyLoss()), lambda: (_x(6, 6), torch.randint(0, 5, (6,))),
                         "target"),
    "CrossEntropyLoss (labels with ignore_index)": (
        lambda: Loss(torch.nn.CrossEntropyLoss(ignore_index=-100)),
        lambda: (_x(6, 6), torch.tensor([1, -100, 4, 0, -100, 2])), "target"),
    "MSELoss": (lambda: Loss(torch.nn.MSELoss()), lambda: (_x(4, 6), _x(4, 5)), "target"),
    "MSELoss(reduction='sum')": (lambda: Loss(torch.nn.MSELoss(reduction="sum")), lambda: (_x(4, 6), _x(4, 5)),
                                 "target"),
    "L1Loss": (lambda: Loss(torch.nn.L1Loss()), lambda: (_x(4, 6), _x(4, 5)), "target"),
    "F.cross_entropy": (lambda: Loss(F.cross_entropy), lambda: (_x(6, 6), torch.randint(0, 5, (6,))), "target"),
    "F.mse_loss": (lambda: Loss(F.mse_loss), lambda: (_x(4, 6), _x(4, 5)), "target"),
    ".view(N, 2, 3)": (lambda: Lin(lambda y: y.view(4, 2, 3)), lambda: _x(4, 6), "weighted"),
    ".view(size(0), -1)": (lambda: ConvThen(lambda y: y.view(y.size(0), -1)), lambda: _x(2, 2, 3, 3), "weighted"),
    ".reshape((N, 3, 2))": (lambda: Lin(lambda y: y.reshape((4, 3, 2))), lambda: _x(4, 6), "weighted"),
    ".flatten(1)": (lambda: ConvThen(lambda y: y.flatten(1)), lambda: _x(2, 2, 3, 3), "weighted"),
    ".permute(0, 2, 1)": (lambda: Lin(_perm), lambda: _x(2, 3, 6), "weighted"),
    ".transpose(1, 2)": (lambda: Lin(lambda y: y.transpose(1, 2)), lambda: _x(2, 3, 6), "weighted"),
    ".transpose(-1, 0)": (lambda: Lin(lambda y: y.transpose(-1, 0)), lambda: _x(6, 6), "weighted"),
    "torch.flatten(y, 1)": (lambda: ConvThen(lambda y: torch.flatten(y, 1)), lambda: _x(2, 2, 3, 3), "weighted"),
    ".matmul(P)": (lambda: ParamMatmul(lambda a, b: a.matmul(b)), lambda: _x(4, 6), "weighted"),
    "a @ P": (lambda: ParamMatmul(lambda a, b: a @ b), lambda: _x(4, 6), "weighted"),
    "torch.matmul(a, b^T) (batched)": (lambda: TwoLin(lambda a, b: torch.matmul(a, b.transpose(1, 2))),
                                       lambda: _x(2, 3, 6), "weighted"),
    "a + b, a - b, a * b, a / (b*b+1)": (
        lambda: TwoLin(lambda a, b: torch.cat([a + b, a - b, a * b, a / (b * b + 1.0)], dim=1)),
        lambda: _x(4, 6), "weighted"),
    "scalars: 2*a + 1, 3 - a, a / 4, -a, 1 / (a*a+1)": (
        lambda: Lin(lambda a: torch.cat([2.0 * a + 1.0, 3.0 - a, a / 4.0, -a, 1.0 / (a * a + 1.0)], dim=1)),
        lambda: _x(4, 6), "weighted"),
    "torch.add/sub/mul/div, .add/.sub/.mul/.div": (
        lambda: TwoLin(lambda a, b: torch.cat([torch.add(a, b), torch.sub(a, b), torch.mul(a, b),
                                               torch.div(a, b * b + 1.0), a.add(b), a.sub(b), a.mul(b),
                                               a.div(b * b + 1.0)], dim=1)),
        lambda: _x(4, 6), "weighted"),
    "broadcast a + bias row": (lambda: TwoLin(lambda a, b: a + b.sum(0, keepdim=True)), lambda: _x(4, 6),
                               "weighted"),
    ".mean(dim=1)": (lambda: Lin(lambda y: y.mean(dim=1)), lambda: _x(4, 6), "weighted"),
    ".mean(-1, keepdim=True)": (lambda: Lin(lambda y: y.mean(-1, keepdim=True)), lambda: _x(2, 3, 6), "weighted"),
    ".sum(1)": (lambda: Lin(lambda y: y.sum(1)), lambda: _x(4, 6), "weighted"),
    ".sum((1, 2))": (lambda: Lin(lambda y: y.sum((1, 2))), lambda: _x(2, 3, 6), "weighted"),
    "torch.mean / torch.sum (dim)": (lambda: Lin(lambda y: torch.mean(y, 1) * torch.sum(y, dim=1)),
                                     lambda: _x(4, 6), "weighted"),
    "torch.cat(dim=1)": (lambda: TwoLin(lambda a, b: torch.cat([a, b], dim=1), n_a=3, n_b=5), lambda: _x(4, 6),
                         "weighted"),
    "torch.cat(dim=-1), rank 3": (lambda: TwoLin(lambda a, b: torch.cat((b, a), -1), n_a=2, n_b=4),
                                  lambda: _x(2, 3, 6), "weighted"),
    "identity_loss(x, 'none')": (lambda: IdentityLoss("none"), lambda: (_x(4, 6), _x(4, 4)), "target"),
    "identity_loss(x, 'sum')": (lambda: IdentityLoss("sum"), lambda: (_x(4, 6), _x(4, 4)), "target"),
    "identity_loss(x, 'mean')": (lambda: IdentityLoss("mean"), lambda: (_x(4, 6), _x(4, 4)), "target"),
}


@functools.lru_cache(maxsize=None)
def result(name):
    """{"forward": (max diff, ok), "gradient": (max diff, ok)} of CASES[name], computed once."""
    factory, make_inputs, kind, *reference = CASES[name]
    torch.manual_seed(sum(map(ord, name)))
    body = factory()
    model, inputs = weighted(body, make_inputs()) if kind == "weighted" else (body, make_inputs())
    return compare(model, inputs, *reference)


@functools.lru_cache(maxsize=None)
def gelu_exact_gap():
    """(max |poptorch GELU - exact torch GELU| forward, same for the gradient) on a range
    wide enough to hold the largest gap (|x| <= 4)."""
    torch.manual_seed(7)
    body = LinMod(torch.nn.GELU())
    x = torch.linspace(-4, 4, 64).reshape(8, 8)
    with torch.no_grad():  # the Linear as the identity, so that the GELU sees x itself
        body.lin = torch.nn.Linear(8, 8)
        body.lin.weight.copy_(torch.eye(8))
        body.lin.bias.zero_()
    w = torch.ones(8, 8)
    got = poptorch.inferenceModel(copy.deepcopy(Weighted(body)))(x, w)[0]
    exact = F.gelu(x)
    trained = copy.deepcopy(Weighted(body))
    training = poptorch.trainingModel(trained, optimizer=poptorch.optim.SGD(trained.parameters(), lr=1.0))
    training(x, w)
    # d loss / d bias_j = sum_i gelu'(x_ij): compare that against the exact derivative's
    xe = x.clone().requires_grad_(True)
    F.gelu(xe).sum().backward()
    grad_got = body.lin.bias.detach() - training.state_dict()["body.lin.bias"]
    return float((got - exact).abs().max()), float((grad_got - xe.grad.sum(0)).abs().max())


@pytest.mark.parametrize("name", list(CASES))
def test_forward_and_gradient_match_torch(name):
    r = result(name)
    assert r["forward"][1], f"{name}: forward differs from torch by {r['forward'][0]:.3g}"
    assert r["gradient"][1], f"{name}: gradient differs from torch's autograd by {r['gradient'][0]:.3g}"


def test_gelu_is_the_tanh_form():
    """GELU matches torch's tanh form tightly (the case above) and is measurably off the
    exact form, by less than GELU_EXACT_GAP."""
    fwd, grad = gelu_exact_gap()
    assert 1e-5 < fwd < GELU_EXACT_GAP, fwd
    assert grad < 8 * GELU_EXACT_GAP, grad  # a sum over 8 rows


def test_dropout_in_training_drops_and_scales():
    """A training model of a module in training mode drops about p of the activations and
    scales the rest by 1 / (1 - p), as torch; an inference model is the identity."""
    torch.manual_seed(3)

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = torch.nn.Dropout(0.5)
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            y = self.drop(x)
            return y, poptorch.identity_loss(self.lin(y).sum(), "none")

    x = torch.rand(64, 4) + 1.0
    model = M()
    y, _ = poptorch.trainingModel(model, poptorch.Options().randomSeed(5),
                                  optimizer=poptorch.optim.SGD(model.parameters(), lr=0.0))(x)
    kept = y != 0
    assert 0.3 < float(kept.float().mean()) < 0.7
    torch.testing.assert_close(y[kept], 2.0 * x[kept], atol=1e-6, rtol=1e-6)
    y, _ = poptorch.inferenceModel(M())(x)
    torch.testing.assert_close(y, x, atol=0, rtol=0)
    model = M().eval()
    y, _ = poptorch.trainingModel(model, optimizer=poptorch.optim.SGD(model.parameters(), lr=0.0))(x)
    torch.testing.assert_close(y, x, atol=0, rtol=0)


def test_difference_table():
    """Prints the largest forward and gradient difference of every case (pytest -s) and
    asserts each is within tolerance."""
    rows = [(name, result(name)) for name in CASES]
    width = max(len(n) for n, _ in rows)
    lines = [f"{'case':<{width}}  {'max |fwd diff|':>14}  {'max |grad diff|':>15}  "
             f"(tolerance {ATOL:g} + {RTOL:g}|torch|)"]
    for name, r in rows:
        lines.append(f"{name:<{width}}  {r['forward'][0]:>14.3e}  {r['gradient'][0]:>15.3e}")
    fwd, grad = gelu_exact_gap()
    lines.append(f"{'GELU vs exact (erf) form, |x|<=4':<{width}}  {fwd:>14.3e}  {grad:>15.3e}  "
                 f"(bound {GELU_EXACT_GAP:g})")
    print("\n" + "\n".join(lines))
    bad = [n for n, r in rows if not (r["forward"][1] and r["gradient"][1])]
    assert not bad, f"outside tolerance: {bad}"
    assert max(r["forward"][0] for _, r in rows) < 1e-4 and max(r["gradient"][0] for _, r in rows) < 1e-4
