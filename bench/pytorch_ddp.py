#!/usr/bin/python3
"""PyTorch DDP twin of Plexus's replication: W processes, one replica each, gradients all-reduced.

The peer of the replication figures of issue 19 (bench/replication_peer.sh): what data
parallelism buys PyTorch on the same machine and recipe. Each of --world-size processes
(torch DistributedDataParallel over gloo, loopback 127.0.0.1 only) trains one replica on
its own shard of MNIST at --batch-size samples per step, at --threads threads; with
--world-size 1 it is one plain process, no process group (what a user runs for one
replica). The models and recipes are the single-process twins':
  mlp     bench/pytorch_mlp.py (samples/mnist: PopXL's MLP, SGD lr 0.005)
  cnn002  bench/pytorch_seed002_cnn.py (samples/distributed_training: seed 002's CNN, Adam)
The timed loop takes --steps steps after --warmup untimed ones, the loss to the host every
step (as Plexus streams it); samples/s counts every replica's samples:
steps x batch x world size / the slowest rank's seconds. Prints one JSON object.

Run it with Debian's /usr/bin/python3 (python3-torch is importable only there):
  /usr/bin/python3 bench/pytorch_ddp.py --model cnn002 --world-size 2 --batch-size 64 --threads 1
"""
import argparse
import json
import multiprocessing
import os
import queue
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_mlp  # noqa: E402
import pytorch_seed002_cnn  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=["mlp", "cnn002"], required=True)
    p.add_argument("--world-size", type=int, default=1, help="processes (replicas)")
    p.add_argument("--batch-size", type=int, required=True, help="samples per step per replica")
    p.add_argument("--threads", type=int, default=1, help="threads per process (torch and BLIS_NUM_THREADS)")
    p.add_argument("--steps", type=int, default=2000, help="timed steps")
    p.add_argument("--warmup", type=int, default=100, help="untimed steps first")
    p.add_argument("--seed", type=int, default=42, help="weight init and shuffle seed")
    p.add_argument("--data-dir", default=os.path.join(ROOT, "data"), help="folder holding mnist/")
    a = p.parse_args()
    for name in ("world_size", "batch_size", "threads", "steps"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if a.warmup < 0:
        p.error("--warmup must be >= 0")
    return a


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def shard(a, rank):
    """This rank's training images and labels (every world_size-th sample, as DistributedSampler)."""
    folder = os.path.join(a.data_dir, "mnist")
    if a.model == "mlp":
        x, y = pytorch_mlp.load_split(folder, True)
    else:
        x, y = pytorch_seed002_cnn.split(folder, True)
    return x[rank::a.world_size], y[rank::a.world_size]


def replica(rank, a, port, results):
    """One rank: its replica's timed training loop; puts (rank, seconds, last loss) on results."""
    os.environ["BLIS_NUM_THREADS"] = str(a.threads)  # before torch's first BLAS call
    import torch
    import torch.distributed as dist

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)  # every replica starts from the same weights (DDP broadcasts them too)
    builder = pytorch_mlp if a.model == "mlp" else pytorch_seed002_cnn
    model = builder.build_model(torch)
    if a.world_size > 1:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=a.world_size)
        model = torch.nn.parallel.DistributedDataParallel(model)
    if a.model == "mlp":
        opt = torch.optim.SGD(model.parameters(), lr=0.005)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    x, y = (torch.from_numpy(v) for v in shard(a, rank))
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(a.seed + rank))
    x, y = x[order].contiguous(), y[order].contiguous()
    steps_per_epoch = len(x) // a.batch_size
    b = a.batch_size

    def step(i):
        i %= steps_per_epoch
        loss = torch.nn.functional.cross_entropy(model(x[i * b:(i + 1) * b]), y[i * b:(i + 1) * b])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    for i in range(a.warmup):
        step(i)
    if a.world_size > 1:
        dist.barrier()
    start = time.perf_counter()
    for i in range(a.steps):
        loss = step(a.warmup + i)
    seconds = time.perf_counter() - start
    if a.world_size > 1:
        dist.destroy_process_group()
    results.put((rank, seconds, loss, torch.__version__))


def main():
    a = parse_args()
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    port = free_port()
    ranks = [ctx.Process(target=replica, args=(r, a, port, results)) for r in range(a.world_size)]
    for p in ranks:
        p.start()
    got = []
    while len(got) < len(ranks):  # a rank that dies ends the run instead of hanging it
        try:
            got.append(results.get(timeout=1))
        except queue.Empty:
            failed = [p.exitcode for p in ranks if p.exitcode not in (None, 0)]
            if failed:
                for p in ranks:
                    p.kill()
                sys.exit(f"pytorch_ddp: a rank exited with status {failed[0]}")
    for p in ranks:
        p.join()
    seconds = max(g[1] for g in got)
    print(json.dumps({"framework": "pytorch-ddp", "torch": got[0][3], "model": a.model, "world_size": a.world_size,
                      "batch_size": a.batch_size, "threads": a.threads, "steps": a.steps, "seconds": seconds,
                      "train_samples_per_second": a.steps * a.batch_size * a.world_size / seconds,
                      "last_loss": sorted(got)[0][2], "BLIS_ARCH_TYPE": os.environ.get("BLIS_ARCH_TYPE", "")}))


if __name__ == "__main__":
    main()
