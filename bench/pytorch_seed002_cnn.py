#!/usr/bin/python3
"""PyTorch twin of samples/distributed_training: seed 002's CNN and recipe, for its accuracy.

Model: Conv2d(1, 32, 3) -> relu -> MaxPool2d(2) -> Flatten -> Linear(5408, 64) -> relu ->
Linear(64, 10), kernels glorot-uniform (Keras's default), biases zero; F.cross_entropy
(mean over the batch); Adam (lr 1e-3, betas 0.9 / 0.999, eps 1e-8; the seed's
tf.compat.v1.train.AdamOptimizer()); images / 255; one process with the global batch
(64 per worker x 2 workers = 128, what the mean-reduced gradients of the two workers train
on), a new shuffle every epoch. Prints the test accuracy on the 10,000 test images and the
training loop's samples/s (batch gathering included, as the sample's figure; data loading
outside it), as a line or, with --json, one JSON object. bench/compare_cnn.sh runs it with
--batch-size 64 (one worker of samples/distributed_training).

Run it with Debian's /usr/bin/python3 (python3-torch is importable only there):
  /usr/bin/python3 bench/pytorch_seed002_cnn.py --seed 1 --steps 2000
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_mlp import read_idx  # noqa: E402  (the same IDX reader as the MLP twin)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=1, help="weight init and shuffle seed")
    p.add_argument("--steps", type=int, default=2000, help="weight updates")
    p.add_argument("--batch-size", type=int, default=128, help="samples per update (the global batch)")
    p.add_argument("--data-dir", default=os.path.join(ROOT, "data"), help="folder holding mnist/")
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (and BLIS_NUM_THREADS if unset)")
    p.add_argument("--skip-test", action="store_true", help="train only")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    a = p.parse_args()
    if a.steps < 1 or a.batch_size < 1 or a.threads < 1:
        p.error("--steps, --batch-size and --threads must be >= 1")
    return a


def split(folder, train):
    prefix = "train" if train else "t10k"
    images = read_idx(folder, f"{prefix}-images-idx3-ubyte", 0x803)
    labels = read_idx(folder, f"{prefix}-labels-idx1-ubyte", 0x801)
    return images.astype(np.float32)[:, None] / 255.0, labels.astype(np.int64)


def build_model(torch):
    """Seed 002's CNN, kernels from torch's global generator (seed it first)."""
    nn = torch.nn
    model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(32 * 13 * 13, 64), nn.ReLU(), nn.Linear(64, 10))
    for layer in model:
        if hasattr(layer, "weight"):
            nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)
    return model


def main():
    a = parse_args()
    # BLIS reads BLIS_NUM_THREADS when it initialises, i.e. at torch's first BLAS call.
    os.environ.setdefault("BLIS_NUM_THREADS", str(a.threads))
    import torch  # after argparse, so --help works without torch

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    folder = os.path.join(a.data_dir, "mnist")
    x_train, y_train = (torch.from_numpy(v) for v in split(folder, True))
    x_test, y_test = (torch.from_numpy(v) for v in split(folder, False))
    nn = torch.nn
    model = build_model(torch)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    shuffle = torch.Generator().manual_seed(a.seed)
    order, position = torch.randperm(len(x_train), generator=shuffle), 0
    start = time.perf_counter()
    for _ in range(a.steps):
        if position + a.batch_size > len(order):  # drop the remainder, new epoch
            order, position = torch.randperm(len(x_train), generator=shuffle), 0
        batch = order[position:position + a.batch_size]
        position += a.batch_size
        loss = nn.functional.cross_entropy(model(x_train[batch]), y_train[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    last_loss = loss.item()
    seconds = time.perf_counter() - start
    rate = a.steps * a.batch_size / seconds
    accuracy = None
    if not a.skip_test:
        with torch.no_grad():
            accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
    if a.json:
        print(json.dumps({"model": "seed002_cnn", "seed": a.seed, "steps": a.steps, "batch_size": a.batch_size,
                          "train_seconds": seconds, "train_samples_per_second": rate, "last_loss": last_loss,
                          "test_accuracy": accuracy, "threads": a.threads, "torch": torch.__version__,
                          "BLIS_NUM_THREADS": os.environ.get("BLIS_NUM_THREADS"),
                          "BLIS_ARCH_TYPE": os.environ.get("BLIS_ARCH_TYPE", "")}))
    else:
        test = "" if accuracy is None else f": test accuracy {100 * accuracy:.2f}%"
        print(f"pytorch seed {a.seed}: {a.steps} steps of batch {a.batch_size}, {rate:.0f} samples/s{test}")


if __name__ == "__main__":
    main()
