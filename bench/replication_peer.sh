#!/usr/bin/env bash
# What data parallelism buys on this machine, Plexus next to its peer (PyTorch
# DistributedDataParallel over gloo, bench/pytorch_ddp.py), in one run, for the two
# replication figures of issue 19:
#   mlp     samples/mnist (PopXL's MLP, device_iterations 1) at R=2 x batch 4 against R=1 x
#           batch 8 (the same global batch); PyTorch: 2 processes x batch 4 against 1 x 8.
#   cnn002  samples/distributed_training (seed 002's CNN, batch 64 per replica, one worker)
#           at R=2 against R=1; PyTorch: 2 processes x batch 64 against 1 x 64.
# Both sides get the machine's 2 cores: one replica runs at 2 threads, each of two at 1 (a
# Plexus replica's kernels use the cores its session gives it; PyTorch at 2 threads per
# process for 2 processes is slower still, measured when this was written: 0.2x). PyTorch
# runs with BLIS_ARCH_TYPE=6 (zen3), its faster kernel set on this VM (bench/compare_cnn.sh).
# Each configuration runs REPEATS times (default 3), interleaved; best and median samples/s
# are printed, and each side's ratio of medians, R=2 over R=1.
# Usage: bench/replication_peer.sh   (env: BUILD_DIR, DATA_DIR, REPEATS, PYTHON,
#        MLP_STEPS (PyTorch MLP timed steps, default 3000), CNN_STEPS (default 1000))
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build-bench}
data_dir=${DATA_DIR:-$root/data}
out_dir=${OUT_DIR:-$build_dir/bench-results/replication_peer}
repeats=${REPEATS:-3}
python=${PYTHON:-/usr/bin/python3}
mlp_steps=${MLP_STEPS:-3000}
cnn_steps=${CNN_STEPS:-1000}
mkdir -p "$out_dir"
rm -f "$out_dir"/*.json

bash "$root/scripts/fetch-data.sh" >/dev/null
if [[ ! -x $build_dir/samples/mnist/mnist ]]; then
  cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DPLEXUS_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build_dir" -j "${JOBS:-2}" --target mnist distributed_training plexus-collectives-local >/dev/null
samples=$build_dir/samples

run_plexus() {  # run_plexus <model> <replicas> <json>
  if [[ $1 == mlp ]]; then
    "$samples/mnist/mnist" --data-dir "$data_dir" --replication-factor "$2" --batch-size $((8 / $2)) \
      --device-iterations 1 --metrics-out "$3" >/dev/null
  else
    "$samples/distributed_training/distributed_training" --data-dir "$data_dir" --num-steps "$cnn_steps" \
      --replication-factor "$2" --skip-test --metrics-out "$3" >/dev/null
  fi
}
run_pytorch() {  # run_pytorch <model> <replicas> <json>
  local batch=64 steps=$cnn_steps
  [[ $1 == mlp ]] && batch=$((8 / $2)) steps=$mlp_steps
  BLIS_ARCH_TYPE=6 "$python" "$root/bench/pytorch_ddp.py" --model "$1" --world-size "$2" --threads $((2 / $2)) \
    --batch-size "$batch" --steps "$steps" --data-dir "$data_dir" >"$3"
}

echo "machine: $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for ((i = 0; i < repeats; ++i)); do
  for model in mlp cnn002; do
    for replicas in 1 2; do
      run_plexus "$model" "$replicas" "$out_dir/plexus_${model}_r${replicas}_$i.json"
      run_pytorch "$model" "$replicas" "$out_dir/pytorch_${model}_r${replicas}_$i.json"
    done
  done
done
python3 - "$out_dir" <<'PY'
import glob, json, statistics, sys
out = sys.argv[1]
print(f"{'model':<8} {'framework':<9} {'R=1 best':>10} {'median':>10} {'R=2 best':>10} {'median':>10} {'R=2/R=1':>8}")
for model in ("mlp", "cnn002"):
    for fw in ("plexus", "pytorch"):
        rates = {r: sorted(json.load(open(f))["train_samples_per_second"]
                           for f in glob.glob(f"{out}/{fw}_{model}_r{r}_*.json")) for r in (1, 2)}
        med = {r: statistics.median(v) for r, v in rates.items()}
        print(f"{model:<8} {fw:<9} {rates[1][-1]:10.0f} {med[1]:10.0f} {rates[2][-1]:10.0f} {med[2]:10.0f} "
              f"{med[2] / med[1]:7.2f}x")
PY
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
