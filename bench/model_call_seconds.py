"""Runs a PopTorch program unmodified (`model_call_seconds.py OUT SCRIPT ARGS...`) and writes
to OUT the seconds spent inside its models' calls (poptorch.PoplarExecutor.__call__,
compilation included), timed with time.perf_counter around each call: a profiler would
slow the program's own Python (its data loading thread) and so its wall time. Used by
bench/poptorch_mnist.sh."""
import atexit
import runpy
import sys
import time

import poptorch


def main():
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__)
        return
    if len(sys.argv) < 3:
        sys.exit(f"model_call_seconds.py: give OUT and the script to run\n\n{__doc__}")
    out, script = sys.argv[1], sys.argv[2]
    seconds = [0.0]
    call = poptorch.PoplarExecutor.__call__

    def timed(self, *args):
        start = time.perf_counter()
        try:
            return call(self, *args)
        finally:
            seconds[0] += time.perf_counter() - start

    poptorch.PoplarExecutor.__call__ = timed
    atexit.register(lambda: open(out, "w").write(f"{seconds[0]}\n"))
    sys.argv = sys.argv[2:]
    sys.path.insert(0, script.rsplit("/", 1)[0] if "/" in script else ".")
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
