#!/usr/bin/env bash
# Fault test of the MPI collectives plugin: `ranks` workers run all_reduce steps
# (fault_worker.cpp); at step 3, rank 1 exits (exit) or stops participating (hang). Every
# other rank must fail that step within the plugin timeout with an error naming replica 1,
# and exit with status 1; mpirun must end, not hang.
#   usage: fault_test.sh <mpirun> <fault_worker> <plugin .so> <ranks> <exit|hang>
# For `exit`, mpirun is told not to kill the job when a rank exits non-zero
# (orte_abort_on_non_zero_status 0), so that the survivors are seen reporting the error
# themselves; for `hang`, mpirun's default stops the hung rank once a survivor exits.
set -uo pipefail
mpirun=$1 worker=$2 plugin=$3 ranks=$4 fault=$5
timeout_ms=2000
extra=()
[[ $fault == exit ]] && extra=(--mca orte_abort_on_non_zero_status 0)

start=$(date +%s)
# Each worker prints "rank N exit S" as it returns S.
output=$(timeout 180 "$mpirun" --oversubscribe "${extra[@]}" -np "$ranks" \
  "$worker" --plugin="$plugin" --fault="$fault" --faulty-rank=1 --fault-step=3 \
  --timeout-ms=$timeout_ms 2>&1)
status=$?
elapsed=$(( $(date +%s) - start ))
echo "$output" | grep -E "^rank " || true
echo "mpirun exit $status after $elapsed s"

fail() { echo "fault_test.sh ($fault, $ranks ranks): $*" >&2; echo "$output" >&2; exit 1; }
[[ $status -eq 124 ]] && fail "mpirun hung (killed after 180 s)"
for ((r = 0; r < ranks; ++r)); do
  [[ $r -eq 1 ]] && continue
  line=$(echo "$output" | grep -E "^rank $r: step 3 failed after" || true)
  [[ -n $line ]] || fail "rank $r did not report the failed step"
  [[ $line == *"replica 1 (MPI rank 1)"* ]] || fail "rank $r's error does not name replica 1: $line"
  seconds=$(echo "$line" | sed -E 's/.*failed after ([0-9.]+) s.*/\1/')
  awk -v s="$seconds" -v t=$timeout_ms 'BEGIN { exit !(s <= t / 1000 + 1.5) }' ||
    fail "rank $r failed after $seconds s, not within the ${timeout_ms} ms timeout"
  echo "$output" | grep -qE "^rank $r exit 1$" || fail "rank $r did not exit with status 1"
done
echo "fault_test.sh ($fault, $ranks ranks): passed"
