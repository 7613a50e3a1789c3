#!/usr/bin/env bash
# The oversubscription cliff (issue 37, item 2): samples/char_gpt with 2 pipeline stages and
# gradient accumulation 4, at --threads-per-device 1, 2 and 0 (the default: cores / devices),
# alternating in one run, ROUNDS times each. Prints each run's tokens/s, each setting's
# median, the ratio of each to the best setting's median, whether the warning of
# core/session/core_budget.h was printed, and the load average before and after.
#
# Usage: bench/char_gpt_threads.sh [extra char_gpt options]
# Environment (all optional):
#   BUILD_DIR  build folder holding samples/char_gpt/char_gpt (default: <repo>/build-release,
#              which scripts/demo.sh builds)
#   ROUNDS     runs per setting (default: 3)
#   STEPS      training steps per run (default: 100)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BUILD_DIR:-$root/build-release}/samples/char_gpt/char_gpt
rounds=${ROUNDS:-3}
steps=${STEPS:-100}
[[ -x $bin ]] || { echo "char_gpt_threads.sh: $bin not found: build it or set BUILD_DIR" >&2; exit 2; }
settings=(1 2 0)
declare -A rates warned
echo "machine: $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= rounds; r++)); do
  for t in "${settings[@]}"; do
    cmd=("$bin" --stages 2 --gradient-accumulation 4 --threads-per-device "$t" --num-steps "$steps"
         --warmup-steps $((steps / 10)) --generate 0 "$@")
    echo "+ ${cmd[*]}" >&2
    out=$("${cmd[@]}" 2>&1)
    rate=$(grep -oE '[0-9]+ tokens/s' <<<"$out" | tail -1 | cut -d' ' -f1)
    [[ -n $rate ]] || { echo "$out" >&2; echo "char_gpt_threads.sh: no tokens/s in the output" >&2; exit 1; }
    rates[$t]+="$rate "
    grep -q "plexus: warning" <<<"$out" && warned[$t]=yes
    echo "round $r, --threads-per-device $t: $rate tokens/s"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "${rates[1]}" "${rates[2]}" "${rates[0]}" "${warned[1]:-no}" "${warned[2]:-no}" "${warned[0]:-no}" <<'PY'
import statistics, sys
names = ["1", "2", "0 (default)"]
medians = [statistics.median(float(x) for x in arg.split()) for arg in sys.argv[1:4]]
best = max(medians)
print(f"{'--threads-per-device':22s} {'median tokens/s':>16s} {'of the best':>12s}  warning")
for name, m, w in zip(names, medians, sys.argv[4:7]):
    print(f"{name:22s} {m:16.0f} {m / best:12.2f}  {w}")
PY
