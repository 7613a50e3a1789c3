#!/usr/bin/env bash
# Training throughput of samples/distributed_training (seed 002's CNN, batch 64 per replica;
# whole-program samples/s over the training loop, data loading included) for 1 worker x 1
# replica, 2 workers x 1 replica (mpirun; gradients all-reduced through the mpi plugin),
# 2 workers x 1 replica with the weight update on the hosts (--host-update), and 1 worker x
# 2 replicas (the local plugin) for reference. Every worker computes its own
# replicas, so on a machine with C cores W workers can use W of them. Each configuration
# runs REPEATS times (default 3); the best and the median samples/s are printed.
# Usage: bench/distributed_training.sh   (env: BUILD_DIR, DATA_DIR, STEPS, REPEATS)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build-bench}
data_dir=${DATA_DIR:-$root/data}
out_dir=${OUT_DIR:-$build_dir/bench-results}
steps=${STEPS:-300}
repeats=${REPEATS:-3}
mkdir -p "$out_dir"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

bash "$root/scripts/fetch-data.sh" >/dev/null
if [[ ! -x $build_dir/samples/distributed_training/distributed_training ]]; then
  cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DPLEXUS_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build_dir" -j "${JOBS:-2}" --target distributed_training plexus-collectives-local \
  plexus-collectives-mpi >/dev/null
bin=$build_dir/samples/distributed_training/distributed_training

echo "machine: $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg); $steps steps per run"
printf '%-8s %-9s %-8s %-10s %14s %14s\n' workers replicas update global_batch best_samples/s median
for config in "1 1 device" "2 1 device" "2 1 host" "1 2 device"; do
  read -r workers replicas update <<<"$config"
  flags=()
  [[ $update == host ]] && flags=(--host-update)
  launch=()
  [[ $workers -gt 1 ]] && launch=(mpirun --oversubscribe -np "$workers")
  jsons=()
  for ((i = 0; i < repeats; ++i)); do
    json=$out_dir/distributed_w${workers}_r${replicas}_${update}_$i.json
    "${launch[@]}" "$bin" --data-dir "$data_dir" --num-steps "$steps" --replication-factor $((workers * replicas)) \
      --skip-test "${flags[@]}" --metrics-out "$json" >/dev/null
    jsons+=("$json")
  done
  python3 - "$workers" "$replicas" "$update" "${jsons[@]}" <<'PY'
import json, statistics, sys
runs = [json.load(open(f)) for f in sys.argv[4:]]
rates = sorted(m["train_samples_per_second"] for m in runs)
w, r = int(sys.argv[1]), int(sys.argv[2])
print(f"{w:<8} {r:<9} {sys.argv[3]:<8} {64 * w * r:<10} {rates[-1]:14.0f} {statistics.median(rates):14.0f}")
PY
done
