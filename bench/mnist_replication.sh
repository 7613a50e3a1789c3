#!/usr/bin/env bash
# What replication buys on this machine: samples/mnist training throughput (whole-program
# samples/s, one epoch of real MNIST, batch preparation included) at R=1 and R=2, with the
# same global batch (R=1 batch 8 vs R=2 batch 4, seed 000 17.1) and with the same batch
# per replica (R=2 batch 8), each at device_iterations 1 and 100; R=2 batch 4 also without
# gradient buckets (--gradient-bucket-bytes 0: one all-reduce per gradient, as before issue
# 19; the default fuses the four into one call). Each configuration runs
# REPEATS times (default 3); the best and the median samples/s are printed, since a shared
# 2-core machine makes single runs noisy.
# Usage: bench/mnist_replication.sh   (env: BUILD_DIR, DATA_DIR, REPEATS)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build-bench}
data_dir=${DATA_DIR:-$root/data}
out_dir=${OUT_DIR:-$build_dir/bench-results}
mkdir -p "$out_dir"

bash "$root/scripts/fetch-data.sh" >/dev/null
if [[ ! -x $build_dir/samples/mnist/mnist ]]; then
  cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DPLEXUS_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build_dir" -j "${JOBS:-2}" --target mnist plexus-collectives-local >/dev/null

echo "machine: $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
repeats=${REPEATS:-3}
printf '%-4s %-7s %-8s %-18s %14s %14s %14s\n' R batch buckets device_iterations best_samples/s median test_accuracy
for config in "1 8 on" "2 4 off" "2 4 on" "2 8 on"; do
  read -r replicas batch buckets <<<"$config"
  bucket_bytes=()
  [[ $buckets == off ]] && bucket_bytes=(--gradient-bucket-bytes 0)
  for di in 1 100; do
    jsons=()
    for ((i = 0; i < repeats; ++i)); do
      json=$out_dir/mnist_r${replicas}_b${batch}_buckets_${buckets}_di${di}_$i.json
      "$build_dir/samples/mnist/mnist" --data-dir "$data_dir" --replication-factor "$replicas" --batch-size "$batch" \
        --device-iterations "$di" "${bucket_bytes[@]}" --metrics-out "$json" >/dev/null
      jsons+=("$json")
    done
    python3 - "$replicas" "$batch" "$buckets" "$di" "${jsons[@]}" <<'PY'
import json, statistics, sys
runs = [json.load(open(f)) for f in sys.argv[5:]]
rates = sorted(m["train_samples_per_second"] for m in runs)
acc = runs[0]["test_accuracy"]
print(f"{sys.argv[1]:<4} {sys.argv[2]:<7} {sys.argv[3]:<8} {sys.argv[4]:<18} {rates[-1]:14.0f} {statistics.median(rates):14.0f} {100*acc:13.2f}%")
PY
  done
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
