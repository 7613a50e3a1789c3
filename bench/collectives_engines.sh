#!/usr/bin/env bash
# The two cross-worker collectives engines side by side, 2 processes on this host, in one run:
#  1. all_reduce (sum, float32), 4 KiB .. 64 MiB: algbw and busbw (nccl-tests) of
#     - the gloo plugin (plx_comm all_reduce through the plugin C ABI) and gloo's own
#       gloo::allreduce on the same buffers: gloo_allreduce_bench, 2 workers started
#       separately by tests/plugins/conformance/launch_workers.sh (no mpirun);
#     - the mpi plugin (the same C ABI) and raw MPI_Allreduce on the same buffers:
#       mpi_allreduce_bench under mpirun -np 2;
#     and each plugin's time over its raw peer's (gloo plugin / gloo, mpi plugin / MPI).
#  2. samples/distributed_training samples/s (worker 0's `trained:` line) with each engine:
#     2 workers x 1 replica over mpi (mpirun -np 2 --collectives mpi), 2 workers x 1 replica
#     over gloo (launch_workers.sh 2 --collectives gloo), 1 worker x 2 replicas (local).
# The load average (uptime) is printed at the start and the end: on a shared machine the
# figures mean little when other processes hold the cores.
# Usage: bench/collectives_engines.sh
#   env: BUILD_DIR (build-bench), DATA_DIR (data), OUT_DIR, JOBS (1), STEPS (300),
#        REPEATS (1, training runs per engine; the median is printed), REPETITIONS (5, timed
#        loops per all-reduce size), SECONDS_PER_LOOP (0.2), SKIP_TRAINING=1
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build-bench}
data_dir=${DATA_DIR:-$root/data}
out_dir=${OUT_DIR:-$build_dir/bench-results}/collectives_engines
steps=${STEPS:-300}
repeats=${REPEATS:-1}
repetitions=${REPETITIONS:-5}
seconds=${SECONDS_PER_LOOP:-0.2}
python=${PYTHON:-/usr/bin/python3}
launch_workers=$root/tests/plugins/conformance/launch_workers.sh
mkdir -p "$out_dir"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

if [[ ! -f $build_dir/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DPLEXUS_BUILD_TESTS=OFF -DPLEXUS_BUILD_BENCH=ON >/dev/null
fi
targets=(gloo_allreduce_bench mpi_allreduce_bench plexus-collectives-gloo plexus-collectives-mpi)
[[ ${SKIP_TRAINING:-0} == 1 ]] || targets+=(distributed_training plexus-collectives-local)
cmake --build "$build_dir" -j "${JOBS:-1}" --target "${targets[@]}" >/dev/null
if [[ ${SKIP_TRAINING:-0} != 1 && ! -d $data_dir/mnist ]]; then
  bash "$root/scripts/fetch-data.sh" >/dev/null
fi

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "start: $(uptime)"
start=$(date +%s)

# 1. all-reduce, both programs (rank / worker 0 prints the table; --raw lines are parsed below).
store=$(mktemp -d /tmp/plexus-gloo-bench.XXXXXX)
trap 'rm -rf "$store"' EXIT
timeout 300 "$launch_workers" 2 "$build_dir/bench/gloo_allreduce_bench" --raw --repetitions="$repetitions" \
  --seconds="$seconds" --store-dir="$store" >"$out_dir/gloo_allreduce.txt" 2>&1 ||
  { cat "$out_dir/gloo_allreduce.txt"; echo "gloo_allreduce_bench failed" >&2; exit 1; }
timeout 300 mpirun --oversubscribe -np 2 "$build_dir/bench/mpi_allreduce_bench" --raw --repetitions="$repetitions" \
  --seconds="$seconds" >"$out_dir/mpi_allreduce.txt" 2>&1 ||
  { cat "$out_dir/mpi_allreduce.txt"; echo "mpi_allreduce_bench failed" >&2; exit 1; }
echo "after all-reduce: $(uptime)"

# 2. distributed_training, each engine (worker 0's `trained: ...` line).
training=$out_dir/training.txt
: >"$training"
if [[ ${SKIP_TRAINING:-0} != 1 ]]; then
  bin=$build_dir/samples/distributed_training/distributed_training
  common=(--data-dir "$data_dir" --num-steps "$steps" --skip-test --replication-factor 2)
  for ((i = 0; i < repeats; ++i)); do
    log=$out_dir/train_mpi_$i.txt
    timeout 600 mpirun --oversubscribe -np 2 "$bin" "${common[@]}" --collectives mpi >"$log" 2>&1 ||
      { cat "$log"; echo "distributed_training over mpi failed" >&2; exit 1; }
    echo "mpi $(grep -m1 '^trained:' "$log")" >>"$training"
    log=$out_dir/train_gloo_$i.txt
    timeout 600 "$launch_workers" 2 "$bin" "${common[@]}" --collectives gloo >"$log" 2>&1 ||
      { cat "$log"; echo "distributed_training over gloo failed" >&2; exit 1; }
    echo "gloo $(grep -m1 '^\[worker 0\] trained:' "$log" | sed 's/^\[worker 0\] //')" >>"$training"
    log=$out_dir/train_local_$i.txt
    timeout 600 "$bin" "${common[@]}" --collectives local >"$log" 2>&1 ||
      { cat "$log"; echo "distributed_training over local failed" >&2; exit 1; }
    echo "local $(grep -m1 '^trained:' "$log")" >>"$training"
  done
fi
echo "end: $(uptime)  ($(($(date +%s) - start)) s)"
echo

"$python" - "$out_dir/gloo_allreduce.txt" "$out_dir/mpi_allreduce.txt" "$training" <<'PY'
import re, statistics, sys

seconds = {}  # (engine, bytes) -> seconds per call
for path in sys.argv[1:3]:
    for line in open(path):
        m = re.search(r"raw (\S+) (\d+) (\d+) (\S+)", line)
        if m:
            seconds[(m[1], int(m[2]))] = float(m[4])
engines = [("gloo_plugin", "gloo plugin"), ("gloo", "gloo::allreduce"), ("mpi_plugin", "mpi plugin"), ("mpi", "MPI_Allreduce")]
n = 2
bus = 2 * (n - 1) / n
sizes = sorted({b for (_, b) in seconds})
print(f"all_reduce sum float32, {n} processes on this host: algbw / busbw in GB/s (1e9 B/s), "
      f"median of the timed loops, slowest process")
head = f"{'bytes':>10} |" + "".join(f" {label:>17} |" for _, label in engines) + f" {'gloo plugin':>11} {'mpi plugin':>11}"
print(head)
print(f"{'':>10} |" + "".join(f" {'algbw':>8} {'busbw':>8} |" for _ in engines) + f" {'/ gloo':>11} {'/ MPI':>11}")
def size(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"
for b in sizes:
    row = f"{size(b):>10} |"
    for key, _ in engines:
        t = seconds.get((key, b))
        row += f" {b / t / 1e9:8.3f} {b / t / 1e9 * bus:8.3f} |" if t else f" {'-':>8} {'-':>8} |"
    def ratio(p, r):
        return f"{seconds[(r, b)] / seconds[(p, b)]:10.2f}x" if (p, b) in seconds and (r, b) in seconds else f"{'-':>11}"
    print(row + " " + ratio("gloo_plugin", "gloo") + " " + ratio("mpi_plugin", "mpi"))
print("ratio = plugin algbw / raw peer algbw (above 1: the plugin was faster)")

runs = {}
for line in open(sys.argv[3]):
    m = re.match(r"(\S+) trained: (\d+) worker\(s\) x (\d+) replica\(s\), (\d+) steps in ([\d.]+) s, ([\d.]+) samples/s", line)
    if m:
        runs.setdefault(m[1], []).append((int(m[2]), int(m[3]), int(m[4]), float(m[6])))
if runs:
    print()
    print("distributed_training (seed 002's CNN, batch 64 per replica, --skip-test), worker 0's samples/s")
    print(f"{'engine':<8} {'launch':<40} {'workers':>7} {'replicas':>8} {'steps':>6} {'samples/s':>10} {'runs':>5}")
    launch = {"mpi": "mpirun -np 2 --collectives mpi", "gloo": "launch_workers.sh 2 --collectives gloo",
              "local": "1 process --collectives local"}
    for engine in ("mpi", "gloo", "local"):
        if engine in runs:
            w, r, steps, _ = runs[engine][0]
            rate = statistics.median(x[3] for x in runs[engine])
            print(f"{engine:<8} {launch[engine]:<40} {w:>7} {r:>8} {steps:>6} {rate:10.0f} {len(runs[engine]):>5}")
PY
