#!/usr/bin/python3
"""PyTorch twin of samples/mnist: the PopXL MNIST MLP trained with the same hyper-parameters.

Model: 784 -> 32 linear + bias -> gelu(tanh) -> 32 -> 10 linear + bias -> gelu(tanh),
F.cross_entropy (mean over the batch), every weight and bias drawn from normal(0, 0.02),
plain SGD (w -= lr * grad). Images normalised as torchvision's Normalize((0.1307,), (0.3081,)),
data preloaded as tensors, shuffled with a seed, drop_last. 2 threads by default.

Modes (JSON result on stdout, progress on stderr):
  --mode throughput --batch-size B --steps N   timed training steps (after a warm-up)
  --mode train [--epochs 1 --batch-size 8 --lr 0.005]   train, then test accuracy (test batch 80)
  --loader torchvision   train mode: the batches come from torchvision's MNIST dataset through
      a torch DataLoader (ToTensor, Normalize, shuffle, drop_last, no workers), as the PopXL
      user guide's mnist.py and mnist_rts.py load them (their mnist_utils), so that a
      comparison with those scripts pays the same data pipeline on both sides

Run it with Debian's /usr/bin/python3 (python3-torch is importable only there):
  BLIS_NUM_THREADS=2 /usr/bin/python3 bench/pytorch_mlp.py --mode throughput --batch-size 8
Debian's torch does its GEMMs in Debian's BLIS (libblas.so.3, OpenMP flavour);
torch.set_num_threads() does not reach BLIS, BLIS_NUM_THREADS does (set before the first
BLAS call: this script defaults it to --threads when unset), and BLIS_ARCH_TYPE picks its
kernel set (see docs/design.md, "Platform facts").
"""
import argparse
import gzip
import json
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEAN, STD = 0.1307, 0.3081


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=["throughput", "train"], default="train")
    p.add_argument("--batch-size", type=int, default=8, help="training batch size")
    p.add_argument("--test-batch-size", type=int, default=80)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--lr", type=float, default=0.005)
    p.add_argument("--seed", type=int, default=42, help="seed for weight init and shuffling")
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (and BLIS_NUM_THREADS if unset)")
    p.add_argument("--steps", type=int, default=5000, help="throughput: timed steps per repeat")
    p.add_argument("--warmup", type=int, default=200, help="throughput: untimed steps first")
    p.add_argument("--repeats", type=int, default=3,
                   help="throughput: timed rounds; samples_per_second is their median, _best their maximum")
    p.add_argument("--data-dir", default=os.path.join(ROOT, "data"), help="folder holding mnist/ and fashion-mnist/")
    p.add_argument("--dataset", choices=["mnist", "fashion"], default="mnist")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--loader", choices=["tensors", "torchvision"], default="tensors",
                   help="train mode: preloaded tensors (default) or torchvision's DataLoader (see above)")
    p.add_argument("--torchvision-dir", default=os.path.join(ROOT, "data", "torchvision"),
                   help="--loader torchvision: the folder holding MNIST/raw (scripts/fetch-data.sh links it)")
    a = p.parse_args()
    for name in ("batch_size", "test_batch_size", "threads", "steps", "repeats"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if a.epochs < 0 or a.warmup < 0 or not a.lr > 0:
        p.error("--epochs and --warmup must be >= 0, --lr > 0")
    return a


def read_idx(folder, name, magic):
    """An IDX file as a numpy uint8 array: folder/name, or folder/name.gz when only that exists."""
    path = os.path.join(folder, name)
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        path += ".gz"
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or int.from_bytes(raw[:4], "big") != magic:
        sys.exit(f"pytorch_mlp: {path} is not an IDX file with magic 0x{magic:08x}")
    ndim = magic & 0xFF
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    count = int(np.prod(dims))
    offset = 4 + 4 * ndim
    if len(raw) != offset + count:
        sys.exit(f"pytorch_mlp: {path} holds {len(raw) - offset} bytes of data, {count} expected for shape {dims}")
    return np.frombuffer(raw, dtype=np.uint8, offset=offset).reshape(dims)


def load_split(folder, train):
    prefix = "train" if train else "t10k"
    images = read_idx(folder, f"{prefix}-images-idx3-ubyte", 0x803)
    labels = read_idx(folder, f"{prefix}-labels-idx1-ubyte", 0x801)
    if images.shape[0] != labels.shape[0]:
        sys.exit(f"pytorch_mlp: {folder}: {images.shape[0]} {prefix} images but {labels.shape[0]} labels")
    x = ((images.astype(np.float32) / 255.0 - MEAN) / STD).astype(np.float32).reshape(len(images), -1)
    return x, labels.astype(np.int64)


def epoch_batches(a, torch, shuffled, steps):
    """One epoch's (x [b, 784], y [b]) batches: slices of the shuffled preloaded tensors, or
    torchvision's MNIST through a DataLoader (--loader torchvision)."""
    b = a.batch_size
    if a.loader == "tensors":
        xs, ys = shuffled()
        return ((xs[i * b:(i + 1) * b], ys[i * b:(i + 1) * b]) for i in range(steps))
    import torchvision
    transform = torchvision.transforms.Compose([torchvision.transforms.ToTensor(),
                                                torchvision.transforms.Normalize((MEAN,), (STD,))])
    dataset = torchvision.datasets.MNIST(a.torchvision_dir, train=True, download=False, transform=transform)
    loader = torch.utils.data.DataLoader(dataset, batch_size=b, shuffle=True, drop_last=True)
    return ((x.reshape(b, -1), y) for x, y in loader)


def build_model(torch):
    """The MLP, weights drawn from torch's global generator (seed it first).

    PopXL's Linear holds W [in, out] and computes x @ W + b; nn.Linear holds W^T [out, in]
    and computes the same x @ W + b (one addmm). Both draws are normal(0, 0.02).
    """
    nn = torch.nn
    model = nn.Sequential(nn.Linear(784, 32), nn.GELU(approximate="tanh"),
                          nn.Linear(32, 10), nn.GELU(approximate="tanh"))
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)
    return model


def main():
    a = parse_args()
    # BLIS reads BLIS_NUM_THREADS when it initialises, i.e. at torch's first BLAS call.
    os.environ.setdefault("BLIS_NUM_THREADS", str(a.threads))
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)

    def log(msg):
        if not a.quiet:
            print(msg, file=sys.stderr, flush=True)

    folder = os.path.join(a.data_dir, "mnist" if a.dataset == "mnist" else "fashion-mnist")
    train_x, train_y = load_split(folder, True)
    train_x, train_y = torch.from_numpy(train_x), torch.from_numpy(train_y)

    model = build_model(torch)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr)  # no momentum, no weight decay: w -= lr * grad

    def step(x, y):
        loss = F.cross_entropy(model(x), y)  # mean over the batch
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    rng = np.random.default_rng(a.seed)
    n = len(train_x)
    b = a.batch_size
    steps_per_epoch = n // b  # drop_last
    if steps_per_epoch == 0:
        sys.exit(f"pytorch_mlp: batch size {b} exceeds the {n} training samples")

    def shuffled():
        perm = torch.from_numpy(rng.permutation(n))
        return train_x[perm].contiguous(), train_y[perm].contiguous()

    result = {"framework": "pytorch", "torch_version": torch.__version__, "mode": a.mode, "batch_size": b,
              "lr": a.lr, "threads": torch.get_num_threads(), "seed": a.seed, "dataset": a.dataset,
              "BLIS_NUM_THREADS": os.environ.get("BLIS_NUM_THREADS"),
              "BLIS_ARCH_TYPE": os.environ.get("BLIS_ARCH_TYPE", "")}

    if a.mode == "throughput":
        # The epoch is shuffled and laid out once, outside the timing; each step then takes a
        # contiguous slice (a view, no copy), as the Plexus benchmark reads its pool in place.
        xs, ys = shuffled()
        counter = [0]

        def next_batch():
            i = counter[0] % steps_per_epoch
            counter[0] += 1
            return xs[i * b:(i + 1) * b], ys[i * b:(i + 1) * b]

        for _ in range(a.warmup):
            step(*next_batch()).item()
        rates = []
        for r in range(a.repeats):
            loss_sum = 0.0
            start = time.perf_counter()
            for _ in range(a.steps):
                loss_sum += step(*next_batch()).item()  # the loss to the host each step, as Plexus streams it
            seconds = time.perf_counter() - start
            rates.append(a.steps * b / seconds)
            log(f"pytorch throughput batch {b}: round {r + 1}/{a.repeats}: {rates[-1]:.0f} samples/s "
                f"({1e6 * seconds / a.steps:.1f} us/step, mean loss {loss_sum / a.steps:.4f})")
        result.update({"steps": a.steps, "warmup": a.warmup, "repeats": a.repeats,
                       "samples_per_second": statistics.median(rates), "samples_per_second_best": max(rates),
                       "samples_per_second_all": rates,
                       "step_seconds": b / statistics.median(rates)})
    else:
        test_x, test_y = load_split(folder, False)
        test_x, test_y = torch.from_numpy(test_x), torch.from_numpy(test_y)
        log(f"{a.dataset}: {n} training and {len(test_x)} test images from {folder}")
        trained = 0
        loss_sum, correct, seen = 0.0, 0, 0
        start = time.perf_counter()
        for epoch in range(a.epochs):
            loss_sum, correct, seen = 0.0, 0, 0
            for x, y in epoch_batches(a, torch, shuffled, steps_per_epoch):
                logits = model(x)
                loss = F.cross_entropy(logits, y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                loss_sum += loss.item()
                correct += int((logits.detach().argmax(-1) == y).sum())
                seen += b
            trained += seen
            log(f"epoch {epoch + 1}/{a.epochs}: loss {loss_sum / steps_per_epoch:.4f} "
                f"train accuracy {100.0 * correct / seen:.2f}%")
        seconds = time.perf_counter() - start
        tb = a.test_batch_size
        batches = len(test_x) // tb
        test_correct = 0
        with torch.no_grad():
            for i in range(batches):
                logits = model(test_x[i * tb:(i + 1) * tb])
                test_correct += int((logits.argmax(-1) == test_y[i * tb:(i + 1) * tb]).sum())
        accuracy = test_correct / (batches * tb) if batches else 0.0
        log(f"pytorch test accuracy: {100.0 * accuracy:.2f}%")
        result.update({"epochs": a.epochs, "test_batch_size": tb, "test_accuracy": accuracy,
                       "train_samples_per_second": trained / seconds if seconds > 0 else 0.0,
                       "train_loss": loss_sum / steps_per_epoch if seen else 0.0,
                       "train_accuracy": correct / seen if seen else 0.0})
    print(json.dumps(result))


if __name__ == "__main__":
    main()
