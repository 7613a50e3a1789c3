#!/usr/bin/env bash
# Seed 003 on this machine, whole-program runs of samples/mnist_pipeline on real MNIST:
#  1. the strategies change the schedule, not the math: one epoch (seed 0) pipelined
#     (1F1B), pipelined fill-drain, sharded, and pipelined with the optimizer state
#     offloaded; the largest difference of any trained parameter against the 1F1B run;
#  2. throughput (training samples/s, batch preparation included) of each, same run;
#  3. the bubble: each device's busy fraction and 1 - their mean, measured from the trace
#     of the last training run (one run = device_iterations x gradient_accumulation
#     micro-batches), next to fill-drain's (S-1)/(M+S-1) for S = 4, M = 10. The bubble is
#     reported as a fraction of device wall time; 4 devices share this machine's cores, so
#     a device also waits for a core, which counts as busy when it happens inside a step.
# Plexus picks each GEMM shape's BLIS kernel set by timing, per process, so two processes
# can differ in the last bits (zen2 vs zen3 kernels) whatever the schedule; the runs pin
# the kernel set with BLIS_ARCH_TYPE (default 6, zen3; PIN_ARCH= to measure per process).
# Usage: bench/mnist_pipeline.sh   (env: BUILD_DIR, DATA_DIR, EPOCHS, PIN_ARCH)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build-bench}
data_dir=${DATA_DIR:-$root/data}
out_dir=${OUT_DIR:-$build_dir/bench-results/mnist_pipeline}
epochs=${EPOCHS:-1}
mkdir -p "$out_dir"

bash "$root/scripts/fetch-data.sh" >/dev/null
if [[ ! -x $build_dir/samples/mnist_pipeline/mnist_pipeline ]]; then
  cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DPLEXUS_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build_dir" -j "${JOBS:-2}" --target mnist_pipeline plexus-strategy-pipelined plexus-strategy-sharded >/dev/null

echo "machine: $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
pin=${PIN_ARCH-6}
if [[ -n $pin ]]; then
  export BLIS_ARCH_TYPE=$pin
  echo "BLIS_ARCH_TYPE=$pin for every run"
fi
run() {  # run <name> <options...>
  local name=$1
  shift
  "$build_dir/samples/mnist_pipeline/mnist_pipeline" --data-dir "$data_dir" --epochs "$epochs" --seed 0 --profile \
    --profile-dir "$out_dir/$name" --metrics-out "$out_dir/$name.json" --weights-out "$out_dir/$name.weights" "$@" \
    >"$out_dir/$name.log"
}
run pipelined_1f1b
run pipelined_fill_drain --schedule fill_drain
run sharded --strategy sharded
run pipelined_offload --offload-optimiser

python3 - "$out_dir" <<'PY'
import array, json, sys
out = sys.argv[1]
names = ["pipelined_1f1b", "pipelined_fill_drain", "sharded", "pipelined_offload"]
def weights(n):
    a = array.array("f")
    with open(f"{out}/{n}.weights", "rb") as f:
        a.frombytes(f.read())
    return a
ref = weights(names[0])
print(f"{'run':22} {'samples/s':>10} {'test acc':>9} {'max |w - w_1f1b|':>17} {'bubble':>7}  busy per device")
for n in names:
    m = json.load(open(f"{out}/{n}.json"))
    w = weights(n)
    diff = max(abs(a - b) for a, b in zip(w, ref)) if len(w) == len(ref) else float("inf")
    prof = m["profile"]["training"]
    busy = " ".join(f"{100 * b:.1f}%" for b in prof["busy_fraction"])
    print(f"{n:22} {m['train_samples_per_second']:10.0f} {100 * m['test_accuracy']:8.2f}% {diff:17.3g} "
          f"{100 * prof['bubble_fraction']:6.1f}%  {busy}")
formula = json.load(open(f"{out}/{names[0]}.json"))["profile"]["training"]["fill_drain_formula"]
print(f"fill-drain formula (S-1)/(M+S-1) with S=4, M=10: {100 * formula:.1f}%")
PY
