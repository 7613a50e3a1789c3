#!/usr/bin/python3
"""Session creation against device_iterations (issue "defaults a user can rely on", item
3): for each count, a fresh process builds a small MLP's graph (4-8-2, batch 2: host arrays of
2^24 iterations fit in memory; inference and training with SGD) and creates a plexus.Session; prints the creation seconds and the
process's peak RSS. Both should stay flat as device_iterations grows; a count whose host
arrays cannot exist is refused at once.

    PYTHONPATH=build-test/python PLEXUS_PLUGIN_PATH=build-test/lib \\
        /usr/bin/python3 bench/session_creation.py [--counts 1,1024,1048576,16777216,1099511627776]
"""
import argparse
import resource
import subprocess
import sys
import time


def create(count, training):
    """One creation in this process: (seconds, peak RSS MiB, error or '')."""
    import numpy as np
    import plexus
    from plexus import ops
    ir = plexus.Ir()
    with ir.main_graph:
        w1 = plexus.variable(np.zeros((4, 8), np.float32), name="w1")
        w2 = plexus.variable(np.zeros((8, 2), np.float32), name="w2")
        x = ops.host_load(plexus.h2d_stream((2, 4), plexus.float32, name="x"))
        labels = ops.host_load(plexus.h2d_stream((2,), plexus.int32, name="labels"))
        logits = ops.matmul(ops.relu(ops.matmul(x, w1)), w2)
        loss = ops.softmax_cross_entropy(logits, labels)
        plexus.d2h_stream(loss, name="loss")
        if training:
            for w, g in zip((w1, w2), plexus.autodiff(loss, [w1, w2])):
                ops.scaled_add_(w, g, b=-0.01)
    start = time.perf_counter()
    error = ""
    try:
        plexus.Session(ir, device_iterations=count).close()
    except plexus.Error as e:
        error = f"{type(e).__name__}: {str(e)[:90]}"
    seconds = time.perf_counter() - start
    return seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, error


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--counts", default="1,1024,1048576,16777216,1099511627776", help="device_iterations, comma-separated")
    p.add_argument("--one", nargs=2, metavar=("COUNT", "TRAINING"), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.one:
        print(*create(int(a.one[0]), a.one[1] == "1"), sep="|")
        return
    print(f"{'graph':<10} {'device_iterations':>18} {'create_s':>9} {'peak_rss_MiB':>13}  refused")
    for training in (0, 1):
        for count in a.counts.split(","):
            out = subprocess.run([sys.executable, __file__, "--one", count, str(training)], capture_output=True,
                                 text=True, check=True).stdout.strip().split("|")
            print(f"{'training' if training else 'inference':<10} {int(count):>18} {float(out[0]):9.3f} "
                  f"{float(out[1]):13.0f}  {out[2]}")


if __name__ == "__main__":
    main()
