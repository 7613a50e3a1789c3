#!/usr/bin/env bash
# Plexus vs PyTorch on the PopXL MNIST MLP, in one run:
#  (a) training-step throughput (samples/s) at batch 8 and 80: bench/mlp_step_bench
#      (Google Benchmark, preloaded synthetic MNIST-like data) vs bench/pytorch_mlp.py
#      --mode throughput (preloaded real MNIST), PyTorch both as installed and with
#      BLIS_ARCH_TYPE set to the kernel set Plexus reports (docs/design.md, "Platform facts");
#  (b) accuracy: samples/mnist/mnist vs pytorch_mlp.py --mode train, same hyper-parameters
#      (batch 8, lr 0.005, 1 epoch, seed 42, test batch 80), test accuracies side by side.
# Prints every command it runs, then a table: batch | Plexus samples/s | PyTorch samples/s | ratio,
# and how many cores other processes kept busy meanwhile (the machine may be shared).
#
# Usage: bench/compare_mlp.sh
# Environment (all optional):
#   BUILD_DIR    build folder, configured Release if new (default: <repo>/build-bench)
#   JOBS         parallel build jobs (default: 1)
#   DATA_DIR     folder holding mnist/ (default: <repo>/data; fetched when missing)
#   OUT_DIR      raw JSON results (default: $BUILD_DIR/bench-results)
#   PYTHON       Debian's interpreter with python3-torch (default: /usr/bin/python3)
#   MIN_TIME     Google Benchmark --benchmark_min_time per repetition, seconds (default: 1)
#   REPEATS      repetitions on both sides; the best and the median are compared (default: 3)
#   TORCH_STEPS  timed PyTorch steps per repetition at batch 8 (default: 3000; batch 80: a quarter)
#   TORCH_THREADS  torch.set_num_threads and BLIS_NUM_THREADS for PyTorch (default: 2)
#   SKIP_ACCURACY=1  only the throughput part
#   WAIT_IDLE    wait up to this many seconds for an idle machine before measuring (default: 0)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build-bench}
jobs=${JOBS:-1}
data_dir=${DATA_DIR:-$root/data}
out_dir=${OUT_DIR:-$build_dir/bench-results}
python=${PYTHON:-/usr/bin/python3}
min_time=${MIN_TIME:-1}
repeats=${REPEATS:-3}
torch_steps=${TORCH_STEPS:-3000}
torch_threads=${TORCH_THREADS:-2}
batches=(8 80)
big_di=100  # the larger device_iterations registered in mlp_step_bench.cpp

# Prints a command (with any VAR=value prefix) and runs it.
run() {
  echo "+ $*" >&2
  env "$@"
}

json_get() {  # json_get FILE EXPR: evaluates EXPR with `d` bound to the file's JSON
  "$python" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# --- dependencies, data, build -------------------------------------------------------
if ! "$python" -c 'import torch, numpy' 2>/dev/null ||
   ! dpkg-query -W -f='${Status}' libbenchmark-dev 2>/dev/null | grep -q 'install ok installed'; then
  run "$root/scripts/install-deps.sh" --bench
fi
if [[ ! -e $data_dir/mnist/train-images-idx3-ubyte && ! -e $data_dir/mnist/train-images-idx3-ubyte.gz ]]; then
  run PLEXUS_DATA_DIR="$data_dir" "$root/scripts/fetch-data.sh"
fi

if [[ ! -f $build_dir/CMakeCache.txt ]]; then
  run cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DPLEXUS_BUILD_TESTS=OFF \
    -DPLEXUS_BUILD_SAMPLES=ON -DPLEXUS_BUILD_BENCH=ON
fi
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
if [[ $build_type != Release ]]; then
  echo "compare_mlp: warning: $build_dir is a '$build_type' build, not Release; figures may be off" >&2
fi
run cmake --build "$build_dir" -j "$jobs" --target mlp_step_bench mnist
bench_bin=$build_dir/bench/mlp_step_bench
mnist_bin=$build_dir/samples/mnist/mnist
mkdir -p "$out_dir"

# --- machine and kernel sets ---------------------------------------------------------
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "machine: $cpu, $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "pytorch: $("$python" -c 'import torch; print(torch.__version__)') ($python)"

# BLIS 0.9 x86-64 arch_t ids (blis.h: enum arch_t).
declare -A blis_id=([skx]=0 [knl]=1 [knc]=2 [haswell]=3 [sandybridge]=4 [penryn]=5 [zen3]=6 [zen2]=7 [zen]=8
                    [excavator]=9 [steamroller]=10 [piledriver]=11 [bulldozer]=12 [generic]=25)
# What Plexus reports: BLIS's own pick, and the kernel set it measured best for the first
# layer's GEMM (8x784x32, the bulk of the step's flops) in a batch-8 session.
run "$bench_bin" --benchmark_filter='batch:8/device_iterations:1/' --benchmark_min_time=0.01 \
  --benchmark_format=json --benchmark_out="$out_dir/plexus_probe.json" >/dev/null
runtime_info=$(json_get "$out_dir/plexus_probe.json" 'd["context"]["plexus"]')
echo "plexus: $runtime_info"
blis_default=$(sed -n 's/.*BLIS would pick \([a-z0-9]*\).*/\1/p' <<<"$runtime_info")
layer0=$(json_get "$out_dir/plexus_probe.json" 'd["context"].get("gemm_batch8_layer0", "")')
if [[ -n $blis_default && $blis_default != generic && -n ${blis_id[$blis_default]:-} ]]; then
  arch_name=$blis_default
  why="BLIS's own pick as Plexus reports it"
elif [[ -n $layer0 && -n ${blis_id[$layer0]:-} ]]; then
  arch_name=$layer0
  why="BLIS would pick '${blis_default:-?}'; Plexus's measured best for the 8x784x32 GEMM"
else
  arch_name=generic
  why="no better kernel set reported"
fi
arch_id=${blis_id[$arch_name]}
echo "PyTorch variant 2: BLIS_ARCH_TYPE=$arch_id ($arch_name: $why)"
echo

# --- contention probe: CPU time used by processes other than this script's ----------
# Busy jiffies of the whole machine (/proc/stat) minus those of this script's waited-for
# children (/proc/$$/stat cutime + cstime) over a phase: how many cores someone else kept
# busy while we measured. Reported per phase; figures from a busy phase are suspect.
cpu_mark() {
  local busy children
  busy=$(awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat)
  children=$(awk '{print $16+$17}' "/proc/$$/stat")
  echo "$busy $children $(date +%s.%N)"
}
others_load() {  # others_load "MARK_START" "MARK_END": average cores busy with other work
  "$python" -c 'import sys; b0,c0,t0=map(float,sys.argv[1].split()); b1,c1,t1=map(float,sys.argv[2].split())
print("%.2f" % max(0.0, ((b1-b0)-(c1-c0))/100.0/(t1-t0)))' "$1" "$2"
}
declare -A others

# WAIT_IDLE=N: wait up to N seconds for a 5-second window in which the machine is idle
# (< 0.2 cores busy), so that neither side is measured on a core someone else holds.
if [[ ${WAIT_IDLE:-0} -gt 0 ]]; then
  deadline=$((SECONDS + WAIT_IDLE))
  while :; do
    mark=$(cpu_mark); sleep 5; busy_now=$(others_load "$mark" "$(cpu_mark)")
    echo "waiting for an idle machine: $busy_now cores busy" >&2
    "$python" -c 'import sys; sys.exit(0 if float(sys.argv[1]) < 0.2 else 1)' "$busy_now" && break
    if ((SECONDS >= deadline)); then echo "compare_mlp: still busy after ${WAIT_IDLE}s; measuring anyway" >&2; break; fi
  done
fi

# --- (a) throughput, interleaved per batch so both sides see the same machine load ----
for b in "${batches[@]}"; do
  steps=$torch_steps
  ((b > 8)) && steps=$(((torch_steps + 3) / 4))
  ((steps < 100)) && steps=100
  mark=$(cpu_mark)
  run "$bench_bin" --benchmark_filter="batch:$b/" --benchmark_min_time="$min_time" \
    --benchmark_repetitions="$repeats" --benchmark_display_aggregates_only=true \
    --benchmark_format=json --benchmark_out="$out_dir/plexus_b$b.json" >/dev/null
  torch_args=(--mode throughput --batch-size "$b" --steps "$steps" --repeats "$repeats" --threads "$torch_threads"
              --data-dir "$data_dir" --quiet)
  run BLIS_NUM_THREADS="$torch_threads" "$python" "$root/bench/pytorch_mlp.py" "${torch_args[@]}" \
    >"$out_dir/pytorch_b$b.json"
  run BLIS_NUM_THREADS="$torch_threads" BLIS_ARCH_TYPE="$arch_id" "$python" "$root/bench/pytorch_mlp.py" \
    "${torch_args[@]}" >"$out_dir/pytorch_b${b}_arch.json"
  others[b$b]=$(others_load "$mark" "$(cpu_mark)")
done

# --- (b) accuracy, same hyper-parameters ------------------------------------------------
others[accuracy]=-1
if [[ ${SKIP_ACCURACY:-0} != 1 ]]; then
  mark=$(cpu_mark)
  run "$mnist_bin" --data-dir "$data_dir" --batch-size 8 --learning-rate 0.005 --epochs 1 --test-batch-size 80 \
    --seed 42 --metrics-out "$out_dir/plexus_mnist.json" >"$out_dir/plexus_mnist.log"
  run BLIS_NUM_THREADS="$torch_threads" "$python" "$root/bench/pytorch_mlp.py" --mode train --batch-size 8 \
    --lr 0.005 --epochs 1 --test-batch-size 80 --seed 42 --threads "$torch_threads" --data-dir "$data_dir" --quiet \
    >"$out_dir/pytorch_mnist.json"
  others[accuracy]=$(others_load "$mark" "$(cpu_mark)")
fi

# --- report (also written to $out_dir/summary.json) -------------------------------------
echo
"$python" "$root/bench/compare_mlp_report.py" --out-dir "$out_dir" --arch-id "$arch_id" --arch-name "$arch_name" \
  --repeats "$repeats" --threads "$torch_threads" --big-di "$big_di" \
  --busy "${others[b8]}" "${others[b80]}" "${others[accuracy]}"
echo "raw results: $out_dir (summary.json)"
