#!/usr/bin/env python3
"""The Python package's side of bench/python_overhead.sh: the training step of
bench/mlp_step_bench.cpp (samples/mnist's MLP, batch 8, one replica) through `plexus`,
with the same graph, the same kind of data and the same timing rules.

  measure: builds the IR as mlp_step_bench does (reshape -> 784x32 matmul + bias -> gelu
    -> 32x10 matmul + bias -> gelu -> softmax cross-entropy, the loss streamed to the host
    every step, autodiff, scaled_add_ per parameter), compiles a session per
    device_iterations D, warms up (3 runs, then half of --min-time, as Google Benchmark sizes
    its timed run meanwhile), then runs `session.run` for at least --min-time seconds: training samples/s = runs x D x batch / wall time. The inputs are
    views of a preloaded pool of 8,000 MNIST-like samples (80 % background pixels, the rest
    uniform 1..255, normalised as torchvision's Normalize((0.1307,), (0.3081,)); labels
    uniform 0..9), the next D x batch samples each run, passed in place (no copy).
    Then times Python's own work per run without the run (own_time).
    Writes JSON {"device_iterations": {D: samples/s}, "own_us": {D: microseconds}}.
  report: reads the C++ (Google Benchmark JSON) and Python files of every repetition and
    prints the table: D, C++ and Python samples/s (best of the repetitions, median in
    brackets), the ratio Python / C++, the per-run overhead of Python in microseconds
    (time per run, Python minus C++), and Python's own work per run.

Usage:
  python_overhead.py measure --device-iterations 1 10 --min-time 1 --out py.json
  python_overhead.py report --cpp cpp_1.json ... --python py_1.json ... [--batch 8]
Needs PYTHONPATH (and PLEXUS_PLUGIN_PATH) pointing at a build tree's python/ (and lib/),
or the package installed.
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np

BATCH = 8
POOL = 8000
LR = 0.005
SEED = 42
MEAN, STD = 0.1307, 0.3081


def build(batch, device_iterations):
    """(session, images stream, labels stream, loss stream) of mlp_step_bench's program."""
    import plexus
    from plexus import ops

    rng = np.random.default_rng(SEED)
    ir = plexus.Ir()
    with ir.main_graph:
        params = [plexus.variable(rng.normal(0, 0.02, shape), plexus.float32, name=name)
                  for name, shape in (("W0", (784, 32)), ("b0", (32,)), ("W1", (32, 10)), ("b1", (10,)))]
        w0, b0, w1, b1 = params
        images = plexus.h2d_stream((batch, 28, 28), plexus.float32, name="images")
        labels = plexus.h2d_stream((batch,), plexus.int32, name="labels")
        x = ops.reshape(ops.host_load(images), (batch, 784))
        x = ops.gelu(ops.matmul(x, w0) + b0)
        logits = ops.gelu(ops.matmul(x, w1) + b1)
        loss = ops.softmax_cross_entropy(logits, ops.host_load(labels))
        loss_d2h = plexus.d2h_stream(loss, name="loss")
        for p, g in zip(params, plexus.autodiff(loss, params)):
            ops.scaled_add_(p, g, a=1.0, b=-LR)
    session = plexus.Session(ir, device_iterations=device_iterations)
    return session, images, labels, loss_d2h


def pool(n):
    """n normalised MNIST-like images [n, 28, 28] float32 and labels [n] int32."""
    rng = np.random.default_rng(SEED)
    ink = rng.random((n, 28, 28)) < 0.2
    pixels = np.where(ink, rng.integers(1, 256, (n, 28, 28)), 0)
    images = ((pixels / 255.0 - MEAN) / STD).astype(np.float32)
    return images, rng.integers(0, 10, n).astype(np.int32)


def measure_one(device_iterations, min_time, data):
    """(samples/s, runs timed, Python's own microseconds per run) at `device_iterations`."""
    session, images, labels, loss_d2h = build(BATCH, device_iterations)
    pool_images, pool_labels = data
    per_run = BATCH * device_iterations
    runs_in_pool = POOL // per_run
    image_shape, label_shape = session.host_shape(images), session.host_shape(labels)

    def inputs(run):  # the run's slice of the pool: views, passed in place
        first = (run % runs_in_pool) * per_run
        return {images: pool_images[first:first + per_run].reshape(image_shape),
                labels: pool_labels[first:first + per_run].reshape(label_shape)}

    # Warm-up as Google Benchmark's: 3 runs (mlp_step_bench's own), then about half the
    # timed period (Google Benchmark runs 1, 10, 100, ... iterations to size its timed run:
    # the device threads' spin-then-sleep hand-over adapts meanwhile).
    warm, start = 0, time.perf_counter()
    while warm < 3 or time.perf_counter() - start < min_time / 2:
        session.run(inputs(warm))
        warm += 1
    runs, start = 0, time.perf_counter()
    while True:
        out = session.run(inputs(runs))
        runs += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_time:
            break
    if not np.isfinite(out[loss_d2h]).all():
        sys.exit("python_overhead: the loss is not finite")
    own = own_time(session, inputs)
    session.close()
    return runs * per_run / elapsed, runs, own


def own_time(session, inputs, blocks=20, per_block=500):
    """Microseconds of Python per run, timed without the run: slicing the inputs from the
    pool and what Session.run does around the C call (the array checks, the output arrays,
    the C structs, the status check), the median of `blocks` blocks. Session.run's guard
    against a concurrent close() (a lock taken twice, ~0.8 us) is not in it. Timed alone
    because timing session.run against the bare C call in one process varies by +-10 us at
    device_iterations 10 on a 2-core machine. Reads the package's private _RunRequest;
    None when it is not there."""
    from plexus import session as session_module
    request_type = getattr(session_module, "_RunRequest", None)
    if request_type is None:
        return None
    times = []
    for _ in range(blocks):
        start = time.perf_counter()
        for run in range(per_block):
            request_type(session, inputs(run), None).raise_for(0)
        times.append((time.perf_counter() - start) / per_block * 1e6)
    return statistics.median(times)


def measure(args):
    import plexus
    data = pool(POOL)
    results, own = {}, {}
    for d in args.device_iterations:
        rate, runs, own[str(d)] = measure_one(d, args.min_time, data)
        results[str(d)] = rate
        own_text = "?" if own[str(d)] is None else f"{own[str(d)]:.1f}"
        print(f"python: device_iterations {d}: {rate:,.0f} samples/s ({runs} runs); Python's own work "
              f"{own_text} us per run", file=sys.stderr)
    with open(args.out, "w") as f:
        json.dump({"device_iterations": results, "own_us": own, "batch": BATCH, "plexus": plexus.runtime_info()}, f,
                  indent=1)


def cpp_rates(path, batch):
    """{D: samples/s} of mlp_step_bench's JSON (every BM_MlpTrainStep/batch:<batch>/... run)."""
    with open(path) as f:
        d = json.load(f)
    out = {}
    for b in d["benchmarks"]:
        name = b.get("run_name", b["name"])
        if b.get("run_type", "iteration") != "iteration" or f"/batch:{batch}/" not in name + "/":
            continue
        di = int(name.split("device_iterations:")[1].split("/")[0])
        out[di] = max(out.get(di, 0.0), b["items_per_second"])
    return out


def report(args):
    cpp = [cpp_rates(p, args.batch) for p in args.cpp]
    py_json = [json.load(open(p)) for p in args.python]
    py = [{int(k): v for k, v in j["device_iterations"].items()} for j in py_json]
    own = [{int(k): v for k, v in j.get("own_us", {}).items() if v is not None} for j in py_json]
    dis = sorted(set.intersection(*(set(r) for r in cpp + py)))
    print("| device_iterations | C++ samples/s | Python samples/s | Python / C++ | "
          "per-run overhead of Python (us) | Python's own work per run (us) |")
    print("|---:|---:|---:|---:|---:|---:|")
    rows = []
    for d in dis:
        c = [r[d] for r in cpp]
        p = [r[d] for r in py]
        o = [r[d] for r in own if d in r]
        cb, cm, pb, pm = max(c), statistics.median(c), max(p), statistics.median(p)
        per_run = args.batch * d  # samples per run
        ob, om = (per_run / pb - per_run / cb) * 1e6, (per_run / pm - per_run / cm) * 1e6
        own_median = statistics.median(o) if o else None
        rows.append({"device_iterations": d, "cpp_best": cb, "cpp_median": cm, "python_best": pb,
                     "python_median": pm, "ratio_best": pb / cb, "ratio_median": pm / cm,
                     "overhead_us_best": ob, "overhead_us_median": om, "own_us_median": own_median})
        own_text = "?" if own_median is None else f"{own_median:.1f}"
        print(f"| {d} | {cb:,.0f} ({cm:,.0f}) | {pb:,.0f} ({pm:,.0f}) | {pb / cb:.1%} ({pm / cm:.1%}) | "
              f"{ob:.1f} ({om:.1f}) | {own_text} |")
    print(f"\nbest of {len(cpp)} repetitions per side, median in brackets; batch {args.batch}, one replica. "
          "Overhead = time per run, Python minus C++ (two processes);\n"
          "own work = slicing the inputs + what Session.run does around the C call, timed without the run "
          "(median of 20 blocks)")
    if args.summary:
        with open(args.summary, "w") as f:
            json.dump(rows, f, indent=1)
    at10 = next((r for r in rows if r["device_iterations"] == 10), None)
    if at10:
        verdict = "met" if at10["ratio_best"] >= 0.9 else "NOT met"
        print(f"target (Python >= 90 % of C++ at device_iterations 10): {verdict}, {at10['ratio_best']:.1%} "
              f"(median {at10['ratio_median']:.1%})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--device-iterations", type=int, nargs="+", default=[1, 10])
    m.add_argument("--min-time", type=float, default=1.0, help="seconds of timed runs per device_iterations")
    m.add_argument("--out", required=True)
    r = sub.add_parser("report")
    r.add_argument("--cpp", nargs="+", required=True, help="mlp_step_bench JSON, one per repetition")
    r.add_argument("--python", nargs="+", required=True, help="`measure` JSON, one per repetition")
    r.add_argument("--batch", type=int, default=BATCH)
    r.add_argument("--summary", help="write the rows as JSON here")
    args = parser.parse_args()
    (measure if args.mode == "measure" else report)(args)


if __name__ == "__main__":
    main()
