#!/usr/bin/python3
"""PyTorch twin of samples/char_gpt: the same decoder-only byte transformer, initialisation,
data order and schedule, to compare loss curves and speed in one run (bench/compare_char_gpt.sh).

Model (samples/char_gpt/model.h, nanoGPT's layout): token + position embeddings, N pre-norm
blocks of causal multi-head attention (separate q, k, v projections) and a tanh-GELU MLP,
final layer norm, an untied output layer (or tied with --tied). Initialisation: the same
values as the sample's, drawn with samples/python/cxx_random (libstdc++'s mt19937_64 and
normal_distribution) in the order of gpt_param_specs(); linear weights stored [in, out] are
transposed into torch's [out, in].
Data: the windows of plexus.Loader over plexus.Text (the sample's loader, same seed: the
same batches in the same order); validation on the first --eval-batches x --batch-size
windows of the validation split, as the sample does. Dropout draws its own masks.
Optimiser: torch.optim.AdamW, betas (0.9, 0.999), eps 1e-8, weight decay on matrices and
embeddings only, the learning rate of the sample's schedule (linear warm-up, cosine decay),
gradients clipped to a global norm of --clip.

Result: JSON on stdout (validation curve, tokens per second); progress on stderr. Run with
Debian's /usr/bin/python3 and the plexus package on PYTHONPATH (build/python):
  PYTHONPATH=build/python BLIS_NUM_THREADS=2 /usr/bin/python3 bench/pytorch_char_gpt.py --num-steps 2000
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "samples", "python"))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add = p.add_argument
    add("--corpus", default="/usr/share/games/fortunes")
    add("--num-steps", type=int, default=2000)
    add("--batch-size", type=int, default=32)
    add("--context", type=int, default=64)
    add("--layers", type=int, default=4)
    add("--width", type=int, default=128)
    add("--heads", type=int, default=4)
    add("--dropout", type=float, default=0.1)
    add("--tied", action="store_true")
    add("--learning-rate", type=float, default=1e-3)
    add("--warmup-steps", type=int, default=100)
    add("--min-lr-ratio", type=float, default=0.1, help="the cosine decays to learning rate x this")
    add("--weight-decay", type=float, default=0.1)
    add("--clip", type=float, default=1.0, help="global gradient norm limit (0: none)")
    add("--eval-every", type=int, default=500)
    add("--eval-batches", type=int, default=20)
    add("--seed", type=int, default=0)
    add("--device-iterations", type=int, default=10,
        help="the sample's steps per session run: its loader cuts the epoch into runs of this many steps")
    add("--threads", type=int, default=2)
    add("--quiet", action="store_true")
    a = p.parse_args()
    for name in ("num_steps", "batch_size", "device_iterations", "context", "layers", "width", "heads", "eval_every", "eval_batches",
                 "threads"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if a.width % a.heads:
        p.error("--width must be a multiple of --heads")
    return a


def param_specs(a):
    """(name, shape, stddev, fill, decay) as samples/char_gpt/model.h gpt_param_specs()."""
    c, std = a.width, 0.02
    residual = 0.02 / math.sqrt(2.0 * a.layers)
    specs = [("wte", (256, c), std, 0.0, True), ("wpe", (a.context, c), std, 0.0, True)]

    def norm(n):
        specs.extend([(n + ".weight", (c,), 0.0, 1.0, False), (n + ".bias", (c,), 0.0, 0.0, False)])

    def linear(n, i, o, s):
        specs.extend([(n + ".weight", (i, o), s, 0.0, True), (n + ".bias", (o,), 0.0, 0.0, False)])

    for layer in range(a.layers):
        b = f"h{layer}"
        norm(b + ".ln_1")
        for m in (".attn.q", ".attn.k", ".attn.v"):
            linear(b + m, c, c, std)
        linear(b + ".attn.proj", c, c, residual)
        norm(b + ".ln_2")
        linear(b + ".mlp.fc", c, 4 * c, std)
        linear(b + ".mlp.proj", 4 * c, c, residual)
    norm("ln_f")
    if not a.tied:
        specs.append(("lm_head.weight", (c, 256), std, 0.0, True))
    return specs


def initial_weights(a):
    """The sample's initial values: mt19937_64(seed), one normal_distribution per parameter."""
    import cxx_random
    rng = cxx_random.Mt19937_64(a.seed)
    out = {}
    for name, shape, std, fill, _ in param_specs(a):
        n = int(np.prod(shape))
        values = cxx_random.normal_float(rng, 0.0, std, n) if std else np.full(n, fill, np.float32)
        out[name] = values.reshape(shape)
    return out


def build_model(a, torch):
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            c = a.width
            self.ln_1, self.ln_2 = nn.LayerNorm(c), nn.LayerNorm(c)
            self.q, self.k, self.v, self.proj = (nn.Linear(c, c) for _ in range(4))
            self.fc, self.mlp_proj = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
            self.drop = nn.Dropout(a.dropout)
            self.register_buffer("mask", torch.tril(torch.ones(a.context, a.context, dtype=torch.bool)))

        def attention(self, h):
            b, t, c = h.shape
            split = lambda x: x.view(b, t, a.heads, c // a.heads).transpose(1, 2)  # noqa: E731
            q, k, v = split(self.q(h)), split(self.k(h)), split(self.v(h))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // a.heads))
            att = att.masked_fill(~self.mask[:t, :t], -1e9)
            y = self.drop(F.softmax(att, dim=-1)) @ v
            return self.drop(self.proj(y.transpose(1, 2).reshape(b, t, c)))

        def forward(self, x):
            x = x + self.attention(self.ln_1(x))
            return x + self.drop(self.mlp_proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh")))

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(256, a.width), nn.Embedding(a.context, a.width)
            self.blocks = nn.ModuleList(Block() for _ in range(a.layers))
            self.ln_f = nn.LayerNorm(a.width)
            self.lm_head = None if a.tied else nn.Linear(a.width, 256, bias=False)

        def forward(self, tokens, targets):
            x = self.wte(tokens) + self.wpe.weight[: tokens.shape[1]]
            for block in self.blocks:
                x = block(x)
            x = self.ln_f(x)
            logits = x @ self.wte.weight.t() if self.lm_head is None else self.lm_head(x)
            return F.cross_entropy(logits.reshape(-1, 256), targets.reshape(-1))

    return Gpt()


def torch_names(a):
    """The sample's parameter names -> (torch parameter name, transpose)."""
    names = {"wte": ("wte.weight", False), "wpe": ("wpe.weight", False), "ln_f.weight": ("ln_f.weight", False),
             "ln_f.bias": ("ln_f.bias", False), "lm_head.weight": ("lm_head.weight", True)}
    parts = {".ln_1": "ln_1", ".ln_2": "ln_2", ".attn.q": "q", ".attn.k": "k", ".attn.v": "v", ".attn.proj": "proj",
             ".mlp.fc": "fc", ".mlp.proj": "mlp_proj"}
    for layer in range(a.layers):
        for ours, theirs in parts.items():
            for kind in ("weight", "bias"):
                linear = not ours.startswith(".ln") and kind == "weight"
                names[f"h{layer}{ours}.{kind}"] = (f"blocks.{layer}.{theirs}.{kind}", linear)
    return names


def load_weights(a, model, torch):
    params = dict(model.named_parameters())
    decay, no_decay = [], []
    names = torch_names(a)
    with torch.no_grad():
        for (name, _, _, _, wd), value in zip(param_specs(a), initial_weights(a).values()):
            target, transpose = names[name]
            params[target].copy_(torch.from_numpy(value.T.copy() if transpose else value))
            (decay if wd else no_decay).append(params[target])
    return [{"params": decay, "weight_decay": a.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def learning_rate(a, step):
    """The sample's schedule: linear warm-up to --learning-rate over --warmup-steps, cosine
    decay to learning rate x --min-lr-ratio at --num-steps (nanoGPT's get_lr)."""
    top, bottom = a.learning_rate, a.learning_rate * a.min_lr_ratio
    if step < a.warmup_steps:
        return top * (step + 1) / a.warmup_steps
    ratio = min(1.0, (step - a.warmup_steps) / max(1, a.num_steps - a.warmup_steps))
    return bottom + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (top - bottom)


def validation_loss(a, model, batches, torch):
    model.eval()
    with torch.no_grad():
        losses = [model(torch.from_numpy(t).long(), torch.from_numpy(y).long()).item() for t, y in batches]
    model.train()
    return float(np.mean(losses))


def batches(a, train):
    """The sample's training micro-batches in order: run after run of --device-iterations
    steps, epoch after epoch."""
    epoch = 0
    while True:
        for run in range(train.runs_per_epoch):
            tokens, targets = train.run_arrays(epoch, run)
            shape = (a.device_iterations, a.batch_size, a.context)
            yield from zip(tokens.reshape(shape), targets.reshape(shape))
        epoch += 1


def main():
    a = parse_args()
    os.environ.setdefault("BLIS_NUM_THREADS", str(a.threads))
    import torch
    import plexus
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    text = plexus.Text(a.corpus)
    train = plexus.Loader(text.windows("train", a.context), batch_size=a.batch_size, seed=a.seed,
                          steps_per_run=a.device_iterations)
    val = plexus.Loader(text.windows("validation", a.context), batch_size=a.batch_size, steps_per_run=a.eval_batches,
                        shuffle=False)
    tokens, targets = val.run_arrays(0, 0)
    val_batches = list(zip(tokens.reshape(a.eval_batches, a.batch_size, -1),
                           targets.reshape(a.eval_batches, a.batch_size, -1)))
    model = build_model(a, torch)
    optimiser = torch.optim.AdamW(load_weights(a, model, torch), lr=a.learning_rate, betas=(0.9, 0.999), eps=1e-8)
    curve, seconds = [], 0.0
    for step, (t, y) in zip(range(a.num_steps), batches(a, train)):
        start = time.perf_counter()
        for group in optimiser.param_groups:
            group["lr"] = learning_rate(a, step)
        loss = model(torch.from_numpy(t).long(), torch.from_numpy(y).long())
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        if a.clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        optimiser.step()
        seconds += time.perf_counter() - start
        if (step + 1) % a.eval_every == 0 or step + 1 == a.num_steps:
            curve.append({"step": step + 1, "loss": validation_loss(a, model, val_batches, torch)})
            if not a.quiet:
                print(f"step {step + 1}: train {loss.item():.4f} val {curve[-1]['loss']:.4f} nats/byte", file=sys.stderr)
    tokens_per_second = a.num_steps * a.batch_size * a.context / seconds
    json.dump({"validation": curve, "tokens_per_second": tokens_per_second, "threads": a.threads,
               "torch": torch.__version__}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
