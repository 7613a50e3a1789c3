#!/usr/bin/python3
"""PyTorch twin of samples/mnist_pipeline: seed 003's CNN and recipe, for its samples/s and accuracy.

Model (the PopTorch "Pipelining" tutorial's Network, samples/mnist_pipeline/network.h):
ConvLayer(1, 10, 5, 2) = Conv2d(1, 10, 5) -> MaxPool2d(2) -> relu, ConvLayer(10, 20, 5, 2),
view(-1, 320) -> Linear(320, 256) -> relu -> Linear(256, 10); PyTorch's default init
(weights and biases U(-1/sqrt(fan_in), 1/sqrt(fan_in))). Recipe (the seed's defaults, as the
sample has them): CrossEntropyLoss (mean over the micro-batch of 40), AdamW (lr 1e-3,
betas 0.9 / 0.999, eps 1e-8, weight decay 0.01), gradient accumulation 10 (the mean
gradient of 10 micro-batches per update: each loss / 10 is backpropagated, then one
step), device iterations 10, so 4,000 samples per "run" and 15 runs per epoch (drop_last);
3 epochs; images normalised as Normalize((0.1307,), (0.3081,)), a new shuffle every epoch
(seeded by --seed + epoch). The loss and correct count of every micro-batch are kept (the
seed's outputMode(All)) and read on the host once per run. Test: the first
10,000 // (8 x 100) x 800 = 9,600 test images in order (the seed's test batch 8 x 100
inference iterations, drop_last), in chunks of 800, no gradients.

The one-device variant of samples/stream_demo (seed 003's CNN, all blocks on device 0, an
update every micro-batch) is --gradient-accumulation 1.

Timing: train_samples_per_second is the training loop's samples / wall time, batch
gathering included, as the sample's figure (the sample's session compilation, like this
script's data loading, is outside it). Prints a line, or JSON with --json.

Run it with Debian's /usr/bin/python3 (python3-torch is importable only there):
  BLIS_NUM_THREADS=2 /usr/bin/python3 bench/pytorch_seed003_cnn.py --seed 0 --epochs 3
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
MEAN, STD = 0.1307, 0.3081


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=0, help="weight init and shuffle seed")
    p.add_argument("--epochs", type=int, default=3, help="passes over the training set")
    p.add_argument("--batch-size", type=int, default=40, help="micro-batch")
    p.add_argument("--gradient-accumulation", type=int, default=10, help="micro-batches per weight update")
    p.add_argument("--device-iterations", type=int, default=10, help="weight updates per run (sets drop_last)")
    p.add_argument("--lr", type=float, default=0.001, help="AdamW learning rate")
    p.add_argument("--test-batch-size", type=int, default=8)
    p.add_argument("--test-device-iterations", type=int, default=100)
    p.add_argument("--skip-test", action="store_true", help="train only")
    p.add_argument("--data-dir", default=os.path.join(ROOT, "data"), help="folder holding mnist/")
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (and BLIS_NUM_THREADS if unset)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    a = p.parse_args()
    for name in ("batch_size", "gradient_accumulation", "device_iterations", "test_batch_size",
                 "test_device_iterations", "threads"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if a.epochs < 0 or not a.lr > 0:
        p.error("--epochs must be >= 0 and --lr > 0")
    return a


def split(folder, train):
    prefix = "train" if train else "t10k"
    images = read_idx(folder, f"{prefix}-images-idx3-ubyte", 0x803)
    labels = read_idx(folder, f"{prefix}-labels-idx1-ubyte", 0x801)
    return (images.astype(np.float32)[:, None] / 255.0 - MEAN) / STD, labels.astype(np.int64)


def main():
    a = parse_args()
    # BLIS reads BLIS_NUM_THREADS when it initialises, i.e. at torch's first BLAS call.
    os.environ.setdefault("BLIS_NUM_THREADS", str(a.threads))
    import torch  # after argparse, so --help works without torch

    nn = torch.nn
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    folder = os.path.join(a.data_dir, "mnist")
    x_train, y_train = (torch.from_numpy(v) for v in split(folder, True))
    x_test, y_test = (torch.from_numpy(v) for v in split(folder, False))

    def conv_layer(c_in, c_out):
        return [nn.Conv2d(c_in, c_out, 5), nn.MaxPool2d(2), nn.ReLU()]

    model = nn.Sequential(*conv_layer(1, 10), *conv_layer(10, 20), nn.Flatten(),
                          nn.Linear(320, 256), nn.ReLU(), nn.Linear(256, 10))
    optimizer = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    micro = a.device_iterations * a.gradient_accumulation
    per_run = micro * a.batch_size
    runs_per_epoch = len(x_train) // per_run  # drop_last

    trained, loss_sum, hits, updates = 0, 0.0, 0, 0
    start = time.perf_counter()
    for epoch in range(a.epochs):
        order = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(a.seed + epoch))
        loss_sum, hits, seen = 0.0, 0, 0
        for run in range(runs_per_epoch):
            index = order[run * per_run:(run + 1) * per_run]
            images, labels = x_train[index], y_train[index]  # the run's batch, gathered as the sample fills it
            losses = torch.empty(micro)
            correct = torch.empty(micro, dtype=torch.int64)
            for m in range(micro):
                x = images[m * a.batch_size:(m + 1) * a.batch_size]
                y = labels[m * a.batch_size:(m + 1) * a.batch_size]
                logits = model(x)
                loss = nn.functional.cross_entropy(logits, y)
                (loss / a.gradient_accumulation).backward()
                losses[m] = loss.detach()
                correct[m] = (logits.detach().argmax(1) == y).sum()
                if (m + 1) % a.gradient_accumulation == 0:
                    optimizer.step()
                    optimizer.zero_grad(set_to_none=True)
                    updates += 1
            loss_sum += losses.sum().item()  # the run's outputs reach the host
            hits += int(correct.sum().item())
            seen += per_run
        trained += seen
    seconds = time.perf_counter() - start
    result = {"model": "seed003_cnn", "seed": a.seed, "epochs": a.epochs, "batch_size": a.batch_size,
              "gradient_accumulation": a.gradient_accumulation, "device_iterations": a.device_iterations,
              "weight_updates": updates, "train_samples": trained, "train_seconds": seconds,
              "train_samples_per_second": trained / seconds if seconds > 0 else 0.0,
              "train_loss": loss_sum / max(1, runs_per_epoch * micro) if a.epochs else 0.0,
              "train_accuracy": hits / max(1, runs_per_epoch * per_run) if a.epochs else 0.0,
              "threads": a.threads, "torch": torch.__version__,
              "BLIS_NUM_THREADS": os.environ.get("BLIS_NUM_THREADS"),
              "BLIS_ARCH_TYPE": os.environ.get("BLIS_ARCH_TYPE", ""), "test_accuracy": None}
    if not a.skip_test:
        chunk = a.test_batch_size * a.test_device_iterations
        tested = len(x_test) // chunk * chunk  # drop_last, in order
        model.eval()
        with torch.no_grad():
            right = sum(int((model(x_test[i:i + chunk]).argmax(1) == y_test[i:i + chunk]).sum())
                        for i in range(0, tested, chunk))
        result.update(test_accuracy=right / tested if tested else 0.0, test_samples=tested)
    if a.json:
        print(json.dumps(result))
    else:
        test = "" if a.skip_test else f", test accuracy {100 * result['test_accuracy']:.2f}%"
        print(f"pytorch seed {a.seed}: {a.epochs} epoch(s), {updates} updates of {a.gradient_accumulation} x "
              f"{a.batch_size}: {result['train_samples_per_second']:.0f} samples/s{test}")


if __name__ == "__main__":
    main()
