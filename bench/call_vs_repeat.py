#!/usr/bin/python3
"""A subgraph called N times against the same subgraph repeated N times (docs/design.md,
"Graphs"): how Plexus's inlined calls and its calls that reuse code (one op per call
site running the graph's kernels, bound once per device) scale with the number of call
sites, next to `repeat`, whose body's kernels are bound once.

The graph is one layer, gelu(x @ W) with x [16, 64] and W [64, 64] (W the same variable at
every call); the program chains it N times (`y = call(g, y, W)`, inlined: side `call`;
reusing code: side `reuse`) or runs `repeat(g, N)`. For each N it prints, per side: the
seconds to build the IR through `popxl`, the seconds to create the session, the seconds of
the first run (which compiles and plans the program), the seconds of a second run, the
planned peak bytes of the device, and whether the side's output equals the inlined call's
bit for bit.

    PYTHONPATH=build-test/python PLEXUS_PLUGIN_PATH=build-test/lib \\
        /usr/bin/python3 bench/call_vs_repeat.py [--counts 1,10,100,1000]
"""
import argparse
import os
import time

import numpy as np


def build(n, mode):
    """(ir, input stream, output stream) of the layer chained n times by `mode` ('call',
    'reuse' or 'repeat')."""
    import popxl
    import popxl.ops as ops
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(np.random.default_rng(0).normal(0, 0.1, (64, 64)).astype(np.float32), name="W")
        inp = popxl.h2d_stream((16, 64), popxl.float32, "x")
        x = ops.host_load(inp, "x")
        graph = ir.create_graph(lambda x, w: ops.gelu(x @ w), x, w)
        if mode in ("call", "reuse"):
            for _ in range(n):
                (x,) = ops.call(graph, x, w, reuse_code=mode == "reuse")
        else:
            (x,) = ops.repeat(graph, n, x, inputs_dict={graph.inputs[1]: w})
        out = popxl.d2h_stream(x.shape, x.dtype, "y")
        ops.host_store(out, x)
    return ir, inp, out


def measure(n, mode, x):
    """(build s, session s, first run s, second run s, planned peak bytes, output) of one
    side."""
    import popxl
    start = time.perf_counter()
    ir, inp, out = build(n, mode)
    built = time.perf_counter()
    session = popxl.Session(ir, "cpu")
    created = time.perf_counter()
    with session:
        result = session.run({inp: x})[out]
        ran = time.perf_counter()
        session.run({inp: x})
        again = time.perf_counter()
    peak = max(d["planned_peak_bytes"] for d in session.memory_report()["devices"])
    return built - start, created - built, ran - created, again - ran, peak, result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", default="1,10,100,1000",
                        help="comma-separated numbers of call sites / iterations (default 1,10,100,1000)")
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    x = np.random.default_rng(1).normal(0, 1, (16, 64)).astype(np.float32)
    print(f"machine: {os.cpu_count()} cores; load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"{'N':>6} {'side':>6} {'build_s':>9} {'session_s':>10} {'run1_s':>8} {'run2_s':>8} {'peak_B':>8} {'equal':>6}")
    for n in counts:
        sides = {side: measure(n, side, x) for side in ("call", "reuse", "repeat")}
        for side, m in sides.items():
            equal = np.array_equal(m[5], sides["call"][5])
            print(f"{n:>6} {side:>6} {m[0]:9.4f} {m[1]:10.4f} {m[2]:8.4f} {m[3]:8.4f} {m[4]:8d} {str(equal):>6}")


if __name__ == "__main__":
    main()
