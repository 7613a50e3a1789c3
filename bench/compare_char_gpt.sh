#!/usr/bin/env bash
# samples/char_gpt next to its PyTorch twin (bench/pytorch_char_gpt.py) in one run: the same
# model, initialisation, data order and schedule, for each seed; validation loss (nats per
# byte) at the end and the training throughput (tokens/s, compute only: the twin's clock
# excludes its data preparation, the sample's includes everything of a session run),
# then their means over the seeds and the ratio. Prints every command it runs and the
# machine's load average before and after.
#
# Usage: bench/compare_char_gpt.sh [extra char_gpt options, e.g. --stages 2 --gradient-accumulation 4]
# Environment (all optional):
#   BUILD_DIR  build folder with samples/char_gpt and the python package (default: <repo>/build-bench,
#              configured Release and built when missing)
#   SEEDS      seeds to run (default: "0 1 2")
#   STEPS      training steps (default: 2000)
#   OUT_DIR    JSON results (default: $BUILD_DIR/bench-results/char_gpt)
#   PYTHON     Debian's interpreter with python3-torch (default: /usr/bin/python3)
#   THREADS    the sample's --threads-per-device (default: 0, cores / devices: pipelined runs
#              oversubscribe the cores and crawl when every device gets 2 threads on 2 cores)
#   TWIN_THREADS  the twin's torch and BLIS threads (default: 1, the faster here: 5709 tok/s
#              against 2308 with 2 on the 2-core machine of bench/README.md)
#   REPORT_ONLY=1  only print the table from the JSON files in OUT_DIR (runs made earlier,
#              for example seeds run side by side by hand)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build-bench}
seeds=${SEEDS:-0 1 2}
steps=${STEPS:-2000}
out_dir=${OUT_DIR:-$build_dir/bench-results/char_gpt}
python=${PYTHON:-/usr/bin/python3}
threads=${THREADS:-0}
twin_threads=${TWIN_THREADS:-1}

run() {  # prints a command (with any VAR=value prefix) and runs it
  echo "+ $*" >&2
  env "$@"
}

measure() {  # builds when needed, then runs both sides for every seed
  "$python" -c 'import torch' 2>/dev/null || run "$root/scripts/install-deps.sh" --bench
  if [[ ! -x $build_dir/samples/char_gpt/char_gpt || ! -d $build_dir/python ]]; then
    [[ -f $build_dir/CMakeCache.txt ]] || run cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release
    run cmake --build "$build_dir" -j 2 --target char_gpt plexus_python
  fi
  mkdir -p "$out_dir"
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  for seed in $seeds; do
    run "$build_dir/samples/char_gpt/char_gpt" --seed "$seed" --num-steps "$steps" --threads-per-device "$threads" \
      --generate 0 --metrics-out "$out_dir/plexus_$seed.json" "$@" | tail -n 1
    run PYTHONPATH="$build_dir/python" BLIS_NUM_THREADS="$twin_threads" "$python" "$root/bench/pytorch_char_gpt.py" \
      --seed "$seed" --num-steps "$steps" --threads "$twin_threads" --quiet >"$out_dir/pytorch_$seed.json"
  done
  echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
}

[[ ${REPORT_ONLY:-0} == 1 ]] || measure "$@"
"$python" - "$out_dir" $seeds <<'PY'
import json, statistics, sys
out, seeds = sys.argv[1], sys.argv[2:]
rows = []
print(f"{'seed':>4} | {'Plexus val loss':>15} | {'PyTorch val loss':>16} | {'diff':>7} | {'Plexus tok/s':>12} | "
      f"{'PyTorch tok/s':>13} | ratio")
for s in seeds:
    p, t = (json.load(open(f"{out}/{who}_{s}.json")) for who in ("plexus", "pytorch"))
    row = (p["validation"][-1]["loss"], t["validation"][-1]["loss"], p["tokens_per_second"], t["tokens_per_second"])
    rows.append(row)
    print(f"{s:>4} | {row[0]:15.4f} | {row[1]:16.4f} | {100 * (row[0] / row[1] - 1):+6.2f}% | {row[2]:12.0f} | "
          f"{row[3]:13.0f} | {row[2] / row[3]:.2f}x")
mean = [statistics.mean(r[i] for r in rows) for i in range(4)]
print(f"mean | {mean[0]:15.4f} | {mean[1]:16.4f} | {100 * (mean[0] / mean[1] - 1):+6.2f}% | {mean[2]:12.0f} | "
      f"{mean[3]:13.0f} | {mean[2] / mean[3]:.2f}x")
PY
