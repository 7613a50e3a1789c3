#!/usr/bin/python3
"""Plain-PyTorch twin of PopTorch's pipelining tutorial program (mnist_pipeline.py, seed 003)
for bench/poptorch_mnist.sh: the same torchvision data pipeline (ToTensor, Normalize, a
DataLoader of combined batches of batch x device iterations x gradient accumulation
samples, 16 workers), the same model (ConvLayer(1, 10, 5, 2), ConvLayer(10, 20, 5, 2),
Linear(320, 256) + ReLU, Linear(256, 10)), CrossEntropyLoss, AdamW (lr 1e-3) and loop
(each combined batch is device-iterations steps of gradient-accumulation micro-batches:
loss / accumulation backpropagated per micro-batch, one step per accumulation), and the
same test (batches of 8 x 100, drop_last). One device, no pipelining: what the program
does on PyTorch's CPU. Prints the test accuracy line the tutorial prints and, with
--json, the training and whole-program seconds.

    /usr/bin/python3 bench/pytorch_mnist_pipeline.py --data-root DIR   (DIR/MNIST/raw)
"""
import argparse
import json
import time

import torch
import torch.nn as nn
import torchvision


class ConvLayer(nn.Module):
    """Conv2d -> MaxPool2d -> ReLU."""

    def __init__(self, in_channels, num_filters, kernel_size, pool_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, num_filters, kernel_size=kernel_size)
        self.pool = nn.MaxPool2d(kernel_size=pool_size)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.pool(self.conv(x)))


def network():
    """The tutorial's Network as one Sequential."""
    return nn.Sequential(ConvLayer(1, 10, 5, 2), ConvLayer(10, 20, 5, 2), nn.Flatten(), nn.Linear(320, 256),
                         nn.ReLU(), nn.Linear(256, 10))


def loader(root, train, batch, shuffle, drop_last, workers):
    """torchvision MNIST through the tutorial's transforms, in batches of `batch`, loaded by
    `workers` worker processes."""
    transform = torchvision.transforms.Compose([torchvision.transforms.ToTensor(),
                                                torchvision.transforms.Normalize((0.1307,), (0.3081,))])
    data = torchvision.datasets.MNIST(root, train=train, download=False, transform=transform)
    return torch.utils.data.DataLoader(data, batch_size=batch, shuffle=shuffle, drop_last=drop_last, num_workers=workers)


def train(model, data, a):
    """The epochs; returns the seconds spent in the model (forward, backward, steps)."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=a.learning_rate)
    loss_fn, in_model = nn.CrossEntropyLoss(), 0.0
    for _ in range(a.epochs):
        for images, labels in data:
            start = time.perf_counter()
            for step_images, step_labels in zip(images.split(a.batch_size * a.gradient_accumulation),
                                                labels.split(a.batch_size * a.gradient_accumulation)):
                for x, y in zip(step_images.split(a.batch_size), step_labels.split(a.batch_size)):
                    (loss_fn(model(x), y) / a.gradient_accumulation).backward()
                optimizer.step()
                optimizer.zero_grad()
            in_model += time.perf_counter() - start
    return in_model


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-root", required=True, help="folder holding MNIST/raw")
    p.add_argument("--batch-size", type=int, default=40)
    p.add_argument("--device-iterations", type=int, default=10)
    p.add_argument("--gradient-accumulation", type=int, default=10)
    p.add_argument("--test-batch-size", type=int, default=8)
    p.add_argument("--num-workers", type=int, default=16,
                   help="data loader worker processes (default 16: the tutorial's)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--learning-rate", type=float, default=0.001)
    p.add_argument("--json", action="store_true", help="print the timings as JSON")
    a = p.parse_args()
    start = time.perf_counter()
    torch.manual_seed(0)
    model = network()
    combined = a.batch_size * a.device_iterations * a.gradient_accumulation
    in_model = train(model, loader(a.data_root, True, combined, True, True, a.num_workers), a)
    model.eval()
    hits = seen = 0
    with torch.no_grad():
        for x, y in loader(a.data_root, False, a.test_batch_size * a.gradient_accumulation * a.device_iterations,
                           True, True, a.num_workers):
            hits += int((model(x).argmax(1) == y).sum())
            seen += len(y)
    print(f"Accuracy on test set: {100.0 * hits / seen:0.2f}%")
    if a.json:
        print(json.dumps({"train_model_seconds": in_model, "wall_seconds": time.perf_counter() - start,
                          "test_accuracy": hits / seen, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
