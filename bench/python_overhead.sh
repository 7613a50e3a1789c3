#!/usr/bin/env bash
# What Python costs per run: the training step of samples/mnist's MLP (batch 8, one
# replica) through the C++ wrapper (bench/mlp_step_bench, BM_MlpTrainStep/batch:8/
# device_iterations:{1,10}) and through the Python package (bench/python_overhead.py: the
# same graph, the same kind of preloaded data passed in place, the same warm-up and
# wall-clock timing), both over the same libplexus.so of one Release build.
# The sides alternate, REPEATS times, so both see the same machine load; the table gives
# samples/s (best of the repetitions, median in brackets), Python / C++, and the per-run
# overhead of Python in microseconds. The load average (uptime) and the cores other
# processes kept busy during each side (/proc/stat) are printed: read them first.
#
# Usage: bench/python_overhead.sh
# Environment (all optional):
#   BUILD_DIR  build folder, configured Release (tests off, bench on) if new (default: <repo>/build-bench)
#   JOBS       parallel build jobs (default: 1)
#   OUT_DIR    raw JSON results (default: $BUILD_DIR/bench-results/python_overhead)
#   PYTHON     Debian's interpreter with python3-cffi and python3-numpy (default: /usr/bin/python3)
#   MIN_TIME   seconds of timed runs per cell and repetition (default: 1)
#   REPEATS    repetitions per side (default: 3)
#   WAIT_IDLE  wait up to this many seconds for a 5-second window with < 0.2 cores busy (default: 0)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build-bench}
jobs=${JOBS:-1}
out_dir=${OUT_DIR:-$build_dir/bench-results/python_overhead}
python=${PYTHON:-/usr/bin/python3}
min_time=${MIN_TIME:-1}
repeats=${REPEATS:-3}

run() {  # prints a command (with any VAR=value prefix) and runs it
  echo "+ $*" >&2
  env "$@"
}

if [[ ! -f $build_dir/CMakeCache.txt ]]; then
  run cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DPLEXUS_BUILD_TESTS=OFF -DPLEXUS_BUILD_BENCH=ON \
    -DPLEXUS_PYTHON="$python" >/dev/null
fi
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
[[ $build_type == Release ]] || echo "python_overhead: warning: $build_dir is a '$build_type' build, not Release" >&2
run cmake --build "$build_dir" -j "$jobs" --target mlp_step_bench plexus_python plexus-collectives-local
[[ -d $build_dir/python/plexus ]] || { echo "python_overhead: $build_dir has no Python package (see its cmake output)" >&2; exit 1; }
mkdir -p "$out_dir"
rm -f "$out_dir"/*.json

# Cores busy with other processes over a phase: machine busy jiffies (/proc/stat) minus
# this script's waited-for children (/proc/$$/stat cutime + cstime), as compare_mlp.sh.
cpu_mark() {
  echo "$(awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat) $(awk '{print $16+$17}' "/proc/$$/stat") $(date +%s.%N)"
}
others_load() {
  "$python" -c 'import sys; b0,c0,t0=map(float,sys.argv[1].split()); b1,c1,t1=map(float,sys.argv[2].split())
print("%.2f" % max(0.0, ((b1-b0)-(c1-c0))/100.0/(t1-t0)))' "$1" "$2"
}

if [[ ${WAIT_IDLE:-0} -gt 0 ]]; then
  deadline=$((SECONDS + WAIT_IDLE))
  while :; do
    mark=$(cpu_mark); sleep 5; busy=$(others_load "$mark" "$(cpu_mark)")
    echo "waiting for an idle machine: $busy cores busy" >&2
    "$python" -c 'import sys; sys.exit(0 if float(sys.argv[1]) < 0.2 else 1)' "$busy" && break
    if ((SECONDS >= deadline)); then echo "python_overhead: still busy after ${WAIT_IDLE}s; measuring anyway" >&2; break; fi
  done
fi

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "machine: $cpu, $(nproc) cores"
echo "uptime at start: $(uptime)"
export PYTHONPATH=$build_dir/python PLEXUS_PLUGIN_PATH=$build_dir/lib
cpp_files=() py_files=() loads=()
run_cpp() {
  local mark
  mark=$(cpu_mark)
  run "$build_dir/bench/mlp_step_bench" --benchmark_filter='^BM_MlpTrainStep/batch:8/device_iterations:(1|10)/' \
    --benchmark_min_time="$min_time" --benchmark_format=json --benchmark_out="$out_dir/cpp_$1.json" >/dev/null
  loads+=("C++ $1: $(others_load "$mark" "$(cpu_mark)")")
}
run_python() {
  local mark
  mark=$(cpu_mark)
  run "$python" "$root/bench/python_overhead.py" measure --device-iterations 1 10 --min-time "$min_time" \
    --out "$out_dir/python_$1.json"
  loads+=("Python $1: $(others_load "$mark" "$(cpu_mark)")")
}
# The order alternates (C++ first, then Python first, ...), so that neither side always
# runs on a machine the other has just warmed or left busy.
for ((i = 1; i <= repeats; i++)); do
  if ((i % 2)); then run_cpp "$i"; run_python "$i"; else run_python "$i"; run_cpp "$i"; fi
  cpp_files+=("$out_dir/cpp_$i.json")
  py_files+=("$out_dir/python_$i.json")
done
echo "uptime at end: $(uptime)"
echo "cores other processes kept busy: ${loads[*]}"
echo
"$python" "$root/bench/python_overhead.py" report --cpp "${cpp_files[@]}" --python "${py_files[@]}" \
  --summary "$out_dir/summary.json"
