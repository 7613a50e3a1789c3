#!/usr/bin/env bash
# Worker failures of samples/distributed_training (issue 18, deliverables 4 and 5), over
# each engine given (mpi: mpirun -np 2; gloo: 2 workers started separately with
# PLEXUS_CLUSTER on loopback):
#  1. kill -9 mid-training: 2 workers train with --model-dir D (a checkpoint every
#     $every steps) and a ${timeout_ms} ms collective timeout; once the first checkpoint
#     exists, worker 1 is killed with SIGKILL. Worker 0 must end non-zero within the timeout
#     plus a margin (measured from the kill), its error must name the
#     lost replica and worker ("replica 1", "MPI rank 1" / "worker 1"), and D must hold only
#     complete checkpoints (plexus-ckpt verify; the atomic write leaves no temporary file).
#  2. relaunch-resume: both workers relaunched with the same D and --num-steps resume from
#     the last complete checkpoint and finish; the weights equal an uninterrupted run's
#     bit for bit (the checkpoint carries the step, the optimizer state and the data
#     position).
# Under mpirun (Open MPI 4.1) what is observed is mpirun's default: it kills worker 0 about
# 1 s after rank 1 dies and reports "process rank 1 ... exited on signal 9", status 137;
# that report is accepted in place of worker 0's own ("replica 1 (MPI rank 1)"), which it
# prints when it times out first. (With orte_abort_on_non_zero_status 0 worker 0 printed
# its error and exited after the timeout, but mpirun then never ended.)
# Usage: worker_failure_test.sh <distributed_training> <plexus-ckpt> <data dir> <mpirun> [mpi] [gloo]
set -uo pipefail
bin=$1 ckpt=$2 data=$3 mpirun=$4
shift 4
engines=("$@")
[[ ${#engines[@]} -gt 0 ]] || engines=(mpi gloo)
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL ($engine): $*" >&2; for f in "$tmp"/*.err; do echo "== $f" >&2; tail -c 3000 "$f" >&2; done; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
steps=400 every=50 timeout_ms=10000  # 5 s timed out once in an uninterrupted run on the loaded 2-core machine
[[ ${PLEXUS_SANITIZED:-0} == 1 ]] && steps=120 every=20
margin=15    # seconds past the collective timeout for worker 0 to end (a loaded machine)
# A launch hangs when its output stops growing for $stall s: a run prints a line every 10 %
# of its steps and at every checkpoint, and a run whose peer is gone fails within the
# collective timeout. Judged from the last output, not from the launch's start, so a slow
# (loaded) machine is no hang: a 400-step run took > 120 s once at load 8, 12 s a line.
stall=60

args() {  # args NAME: the training command line (after the binary)
  echo --data-dir "$data" --num-steps "$steps" --skip-test --threads-per-device 1 --checkpoint-every "$every" \
    --collective-timeout-ms "$timeout_ms" --collectives "$engine" --weights-out "$tmp/$1.bin"
}

descendants() {  # descendants PID: every process below PID
  local c
  for c in $(pgrep -P "$1"); do echo "$c"; descendants "$c"; done
}

# guard NAME PIDS...: ends the launch NAME (PIDS and everything below them, SIGTERM first
# so that mpirun takes its ranks down) once its output has not grown for $stall s, and
# leaves $tmp/NAME.hung behind. Returns when every pid has ended.
guard() {
  local name=$1 size last=-1 quiet=0 p alive
  shift
  while true; do
    alive=0
    for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [[ $alive == 1 ]] || return 0
    size=$(cat "$tmp/$name".*.out "$tmp/$name".*.err 2>/dev/null | wc -c)
    if [[ $size != "$last" ]]; then last=$size quiet=0; else quiet=$((quiet + 1)); fi
    if ((quiet >= stall)); then
      touch "$tmp/$name.hung"
      # shellcheck disable=SC2046  # descendants prints a list of pids
      for p in "$@"; do kill -TERM $(descendants "$p") "$p" 2>/dev/null; done
      sleep 5
      # shellcheck disable=SC2046
      for p in "$@"; do kill -9 $(descendants "$p") "$p" 2>/dev/null; done
      return 0
    fi
    sleep 1
  done
}

# launch NAME ARGS...: starts 2 workers in the background, watched by guard. Sets launched
# (the pids to wait for, worker 0's first) and launch_name. Output of worker i in
# $tmp/NAME.i.out / .err (mpirun: both ranks in NAME.0.*).
launch() {
  local name=$1
  shift
  launch_name=$name
  if [[ $engine == mpi ]]; then
    "$mpirun" --oversubscribe -np 2 "$bin" "$@" >"$tmp/$name.0.out" 2>"$tmp/$name.0.err" &
    launched=($!)
  else
    local ports
    ports=($(/usr/bin/python3 -c "
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(('127.0.0.1', 0))
print(' '.join(str(s.getsockname()[1]) for s in socks))"))
    launched=()
    for i in 0 1; do
      PLEXUS_CLUSTER="{\"workers\": [\"127.0.0.1:${ports[0]}\", \"127.0.0.1:${ports[1]}\"], \"index\": $i}" \
        "$bin" "$@" >"$tmp/$name.$i.out" 2>"$tmp/$name.$i.err" &
      launched+=($!)
    done
  fi
  pids+=("${launched[@]}")
  guard "$name" "${launched[@]}" &
  guard_pid=$!
}

worker1_pid() {  # the pid of worker 1 of the last launch
  local p
  if [[ $engine == mpi ]]; then
    for p in $(descendants "${launched[0]}"); do
      tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && { echo "$p"; return; }
    done
  else
    echo "${launched[1]}"
  fi
}

wait_all() {  # waits for the last launch; sets status to worker 0's (mpirun's under mpi)
  local p
  wait "${launched[0]}"
  status=$?
  for p in "${launched[@]:1}"; do wait "$p"; done
  wait "$guard_pid"
  [[ ! -e $tmp/$launch_name.hung ]] || fail "$launch_name hung: no output for $stall s"
}

for engine in "${engines[@]}"; do
  [[ $engine == mpi || $engine == gloo ]] || { echo "unknown engine $engine" >&2; exit 2; }
  start=$(date +%s)
  # The uninterrupted run.
  launch straight_$engine $(args straight_$engine) --model-dir "$tmp/straight_$engine.model"
  wait_all
  [[ $status == 0 ]] || fail "the uninterrupted run failed"
  grep -h "^trained" "$tmp"/straight_$engine.0.out || fail "the uninterrupted run did not train"

  # 1. kill -9 of worker 1 once training is under way.
  d=$tmp/model_$engine
  launch killed_$engine $(args killed_$engine) --model-dir "$d"
  for ((i = 0; i < 1200; ++i)); do
    [[ -e $d/checkpoint.plxckpt ]] && break
    sleep 0.1
  done
  [[ -e $d/checkpoint.plxckpt ]] || fail "no checkpoint after 120 s"
  victim=$(worker1_pid)
  [[ -n $victim ]] || fail "worker 1 not found"
  killed_at=$(date +%s.%N)
  kill -9 "$victim"
  wait_all
  took=$(/usr/bin/python3 -c "import time; print(f'{time.time() - $killed_at:.1f}')")
  echo "$engine: worker 1 (pid $victim) killed after the first checkpoint; worker 0 ended with status $status" \
    "$took s later (timeout $((timeout_ms / 1000)) s)"
  [[ $status != 0 ]] || fail "worker 0 ended with status 0 after worker 1 was killed"
  /usr/bin/python3 -c "import sys; sys.exit(not $took <= $timeout_ms / 1000 + $margin)" ||
    fail "worker 0 took $took s to end, more than the timeout + $margin s"
  err=$tmp/killed_$engine.0.err
  grep -h "worker 0 of 2" "$err" | head -3
  [[ $engine == mpi ]] && lost="MPI rank 1" || lost="worker 1"
  grep -h "process rank 1 .* signal 9" "$err"
  grep "worker 0 of 2" "$err" | grep "replica 1" | grep -q "$lost" ||
    { [[ $engine == mpi ]] && grep -q "process rank 1 .* signal 9" "$err"; } ||
    fail "neither worker 0's error names replica 1 and $lost nor mpirun reports rank 1's death"
  ls -A "$d"
  [[ $(ls -A "$d") == checkpoint.plxckpt ]] || fail "the model folder holds more than checkpoint.plxckpt: $(ls -A "$d")"
  "$ckpt" verify "$d/checkpoint.plxckpt" || fail "the checkpoint left behind is damaged"

  # 2. Relaunched, both resume from the last complete checkpoint and end where the
  # uninterrupted run ended.
  launch resumed_$engine $(args resumed_$engine) --model-dir "$d"
  wait_all
  [[ $status == 0 ]] || fail "the relaunched run failed"
  grep -h "^resumed from\|^trained" "$tmp"/resumed_$engine.0.out || fail "the relaunched run did not resume"
  grep -q "^resumed from" "$tmp"/resumed_$engine.0.out || fail "the relaunched run did not resume"
  cmp "$tmp/resumed_$engine.bin" "$tmp/straight_$engine.bin" ||
    fail "resumed after the kill, the weights differ from the uninterrupted run's"
  echo "ok ($engine): kill -9 of worker 1 -> worker 0 failed in $took s naming replica 1 / $lost, checkpoint intact;" \
    "relaunched, resumed and equal to the uninterrupted run bit for bit ($(($(date +%s) - start)) s)"
done
