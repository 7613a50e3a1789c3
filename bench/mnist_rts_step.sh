#!/usr/bin/env bash
# The cost of RTS in seed 000's sample: samples/mnist_rts step time at R=2, batch 4 per
# replica, with and without --rts (the all-gathers of W0 and W1 and the reduce-scatters
# of their gradients against plain all-reduces), over one epoch of real MNIST at
# device_iterations 100. Step time = global batch / training samples per second (the
# host's batch preparation included). REPEATS runs each (default 3): best and median.
# Usage: bench/mnist_rts_step.sh   (env: BUILD_DIR, DATA_DIR, REPEATS)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build-bench}
data_dir=${DATA_DIR:-$root/data}
out_dir=${OUT_DIR:-$build_dir/bench-results}
repeats=${REPEATS:-3}
mkdir -p "$out_dir"

bash "$root/scripts/fetch-data.sh" >/dev/null
if [[ ! -d $build_dir ]]; then
  cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DPLEXUS_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build_dir" -j "${JOBS:-2}" --target mnist_rts plexus-collectives-local >/dev/null

echo "machine: $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %16s %16s %14s\n' mode best_us/step median_us/step test_accuracy
for mode in plain rts; do
  flag=()
  [[ $mode == rts ]] && flag=(--rts)
  jsons=()
  for ((i = 0; i < repeats; ++i)); do
    json=$out_dir/mnist_rts_r2_${mode}_$i.json
    "$build_dir/samples/mnist_rts/mnist_rts" --data-dir "$data_dir" --replication-factor 2 --batch-size 4 \
      --device-iterations 100 "${flag[@]}" --metrics-out "$json" >/dev/null
    jsons+=("$json")
  done
  python3 - "$mode" "${jsons[@]}" <<'PY'
import json, statistics, sys
runs = [json.load(open(f)) for f in sys.argv[2:]]
steps = sorted(1e6 * m["batch_size"] * m["replication_factor"] / m["train_samples_per_second"] for m in runs)
print(f"{sys.argv[1]:<10} {steps[0]:16.1f} {statistics.median(steps):16.1f} {100*runs[0]['test_accuracy']:13.2f}%")
PY
done
