#!/usr/bin/env bash
# Soak (issue 21): samples/mnist_pipeline (one process, seed 003's pipelined CNN) and
# samples/distributed_training (2 worker processes, seed 002's CNN, gradients all-reduced
# through the gloo plugin; ENGINE=mpi: under mpirun) train side by side on real MNIST for
# DURATION, looping over the data (epochs / steps without a practical end) and saving a
# checkpoint every CHECKPOINT_INTERVAL of wall time (--checkpoint-every-seconds).
# Every SAMPLE_INTERVAL it reads, for each of the three processes, the resident memory
# (VmRSS of /proc/PID/status), the open file descriptors (entries of /proc/PID/fd) and the
# threads (Threads of /proc/PID/status), and prints a row. A sample is not taken while a
# checkpoint is being written (its temporary file is there, holding a descriptor and
# compression threads for milliseconds): it waits for the save to end. Each checkpoint a
# program writes is caught as it lands (a hard link to that version of the file, which the
# next save replaces) and checked with `plexus-ckpt verify`; the programs print every save
# ("checkpoint: step N saved to ..."), so a save the script missed is counted too.
# At DURATION the processes are ended (SIGTERM) and the verdict printed. Exit status 0 when
# for every process
#  - RSS grew less than MAX_RSS_GROWTH % from the first sample after the warm-up to the last,
#    not counting the largest rise between two samples: a leak grows RSS at every save it
#    leaks in, while glibc's malloc keeping a save's buffers resident is one step (1.3 MB
#    seen after the warm-up in 1 run of 4 at 15 s saves, +1.23 %), which this leaves out;
#    two such steps, or a leak, still fail,
#  - the descriptor and thread counts were the same in every sample after the warm-up,
#  - it ran until the end,
# and every checkpoint written verified (at least DURATION / (1.1 CHECKPOINT_INTERVAL) - 1 each);
# 1, naming what failed, otherwise; 3 (inconclusive) when nothing failed but the warm-up
# left fewer than 2 samples to judge (a slow or busy machine); 2 for a bad knob.
# The warm-up (WARMUP=auto) lasts until every program has saved two checkpoints and the
# last of them is past its first epoch (the save lines say the epoch); the samples from
# the next one on are judged. Before that, RSS settles by a few MB in steps, measured: glibc's
# malloc hands the first save's large buffers (and the loader's first run buffers) back to
# the system and raises its mmap threshold, so the next ones come from the heap and stay
# resident for reuse; the first epoch boundary adds the next epoch's sample order and runs.
# WARMUP=<time> ends it at a fixed time instead.
# Both programs run at once (not one after the other): the soak takes DURATION, not twice
# it, and each process is sampled on its own, so sharing the cores only slows the steps.
#
# Usage: bench/soak.sh [--help]
# Environment (times: N seconds, or Ns, Nm, Nh):
#   DURATION (60m), CHECKPOINT_INTERVAL (5m, >= 5s), SAMPLE_INTERVAL (60s),
#   WARMUP (auto, or a time), MAX_RSS_GROWTH (1, percent),
#   ENGINE (gloo: 2 workers started separately with PLEXUS_CLUSTER, no mpirun; or mpi),
#   PROGRAMS ("mnist_pipeline distributed_training": either or both),
#   BUILD_DIR (build-bench; configured as Release when new, the targets built), JOBS (2),
#   DATA_DIR ($PLEXUS_DATA_DIR or data/; fetched when missing), OUT_DIR (default
#   $BUILD_DIR/bench-results/soak; its logs/, checkpoints/, caught/ and samples.tsv are replaced),
#   MNIST_PIPELINE, DISTRIBUTED_TRAINING, PLEXUS_CKPT (the binaries: when all needed are
#   given nothing is built, as the ctest test soak_short does), MPIRUN (mpirun).
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
die() { echo "soak.sh: $*" >&2; exit 2; }
[[ ${1:-} == --help || ${1:-} == -h ]] && { usage; exit 0; }
[[ $# -eq 0 ]] || die "no arguments are taken, only environment variables (see --help); got '$*'"

root=$(cd "$(dirname "$0")/.." && pwd)

seconds_of() {  # seconds_of NAME VALUE: VALUE (N, Ns, Nm, Nh) in whole seconds
  local name=$1 value=$2
  [[ $value =~ ^([0-9]+)([smh]?)$ ]] || die "$name must be N, Ns, Nm or Nh (whole numbers), got '$value'"
  case ${BASH_REMATCH[2]} in
    m) echo $((10#${BASH_REMATCH[1]} * 60)) ;;
    h) echo $((10#${BASH_REMATCH[1]} * 3600)) ;;
    *) echo $((10#${BASH_REMATCH[1]})) ;;
  esac
}
duration=$(seconds_of DURATION "${DURATION:-60m}")
ckpt_interval=$(seconds_of CHECKPOINT_INTERVAL "${CHECKPOINT_INTERVAL:-5m}")
sample_interval=$(seconds_of SAMPLE_INTERVAL "${SAMPLE_INTERVAL:-60s}")
warmup=${WARMUP:-auto}
[[ $warmup == auto ]] || warmup=$(seconds_of WARMUP "$warmup")
max_growth=${MAX_RSS_GROWTH:-1}
engine=${ENGINE:-gloo}
read -r -a programs <<<"${PROGRAMS:-mnist_pipeline distributed_training}"
[[ $max_growth =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "MAX_RSS_GROWTH must be a percentage like 1 or 0.5, got '$max_growth'"
((ckpt_interval >= 5)) || die "CHECKPOINT_INTERVAL must be >= 5s (the script looks for new checkpoints every second), got ${ckpt_interval}s"
((sample_interval >= 1)) || die "SAMPLE_INTERVAL must be >= 1s"
if [[ $warmup == auto ]]; then
  ((duration >= 2 * ckpt_interval + 2 * sample_interval)) ||
    die "DURATION (${duration}s) ends before 2 checkpoints (CHECKPOINT_INTERVAL ${ckpt_interval}s) and 2 samples after them"
else
  ((duration >= warmup + 2 * sample_interval)) ||
    die "DURATION (${duration}s) leaves fewer than 2 samples after WARMUP (${warmup}s) at SAMPLE_INTERVAL ${sample_interval}s"
fi
[[ $engine == gloo || $engine == mpi ]] || die "ENGINE must be gloo or mpi, got '$engine'"
((${#programs[@]} > 0)) || die "PROGRAMS is empty"
for p in "${programs[@]}"; do
  [[ $p == mnist_pipeline || $p == distributed_training ]] ||
    die "PROGRAMS takes mnist_pipeline and distributed_training, got '$p'"
done
has() { [[ " ${programs[*]} " == *" $1 "* ]]; }

# --- binaries and data
build_dir=${BUILD_DIR:-$root/build-bench}
pipeline_bin=${MNIST_PIPELINE:-$build_dir/samples/mnist_pipeline/mnist_pipeline}
training_bin=${DISTRIBUTED_TRAINING:-$build_dir/samples/distributed_training/distributed_training}
ckpt_bin=${PLEXUS_CKPT:-$build_dir/bin/plexus-ckpt}
given=1
[[ -n ${PLEXUS_CKPT:-} ]] || given=0
has mnist_pipeline && [[ -z ${MNIST_PIPELINE:-} ]] && given=0
has distributed_training && [[ -z ${DISTRIBUTED_TRAINING:-} ]] && given=0
if ((given == 0)); then
  if [[ ! -f $build_dir/CMakeCache.txt ]]; then
    cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DPLEXUS_BUILD_TESTS=OFF >/dev/null
  fi
  targets=(plexus-ckpt)
  has mnist_pipeline && targets+=(mnist_pipeline plexus-strategy-pipelined)
  has distributed_training && targets+=(distributed_training "plexus-collectives-$engine")
  echo "soak.sh: building ${targets[*]} in $build_dir"
  cmake --build "$build_dir" -j "${JOBS:-2}" --target "${targets[@]}" >/dev/null
fi
for b in "$ckpt_bin" $(has mnist_pipeline && echo "$pipeline_bin") $(has distributed_training && echo "$training_bin"); do
  [[ -x $b ]] || die "$b is not an executable (build it, or point MNIST_PIPELINE / DISTRIBUTED_TRAINING / PLEXUS_CKPT at it)"
done
data_dir=${DATA_DIR:-${PLEXUS_DATA_DIR:-$root/data}}
if [[ ! -e $data_dir/mnist/train-images-idx3-ubyte && ! -e $data_dir/mnist/train-images-idx3-ubyte.gz ]]; then
  PLEXUS_DATA_DIR=$data_dir bash "$root/scripts/fetch-data.sh" >/dev/null || die "no MNIST in $data_dir and fetching failed"
fi
mpirun=${MPIRUN:-mpirun}
if has distributed_training && [[ $engine == mpi ]]; then
  command -v "$mpirun" >/dev/null || die "ENGINE=mpi needs $mpirun"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
out_dir=${OUT_DIR:-$build_dir/bench-results/soak}
mkdir -p "$out_dir"
rm -rf "${out_dir:?}"/{logs,checkpoints,caught} "$out_dir/samples.tsv"
mkdir -p "$out_dir/logs" "$out_dir/checkpoints" "$out_dir/caught"

# --- the processes: names[k], pids[k], logs[k]; saver_log[program]: the log with its save lines
names=() pids=() logs=()
declare -A ckdir saver_log
launcher=""  # mpirun's pid (ENGINE=mpi)
stop_all() {
  local p
  for p in "${pids[@]}" $launcher; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}" $launcher; do wait "$p" 2>/dev/null || true; done
}
trap 'stop_all' EXIT
trap 'echo "soak.sh: interrupted" >&2; exit 130' INT TERM

if has mnist_pipeline; then
  ckdir[mnist_pipeline]=$out_dir/checkpoints/mnist_pipeline
  # 3 million epochs of 15 session runs: longer than any soak; the test pass never comes.
  "$pipeline_bin" --data-dir "$data_dir" --epochs 3000000 --checkpoint-dir "${ckdir[mnist_pipeline]}" \
    --checkpoint-every-seconds "$ckpt_interval" >"$out_dir/logs/mnist_pipeline.log" 2>&1 &
  names+=(mnist_pipeline) pids+=($!) logs+=("$out_dir/logs/mnist_pipeline.log")
  saver_log[mnist_pipeline]=$out_dir/logs/mnist_pipeline.log
fi
if has distributed_training; then
  ckdir[distributed_training]=$out_dir/checkpoints/distributed_training
  # 10^9 steps (the loader starts a new epoch when one ends); one compute thread per worker.
  args=(--data-dir "$data_dir" --num-steps 1000000000 --skip-test --threads-per-device 1 --collectives "$engine"
        --checkpoint-dir "${ckdir[distributed_training]}" --checkpoint-every-seconds "$ckpt_interval")
  if [[ $engine == gloo ]]; then
    read -r -a ports < <(/usr/bin/env python3 -c "
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(('127.0.0.1', 0))
print(' '.join(str(s.getsockname()[1]) for s in socks))")
    for i in 0 1; do
      PLEXUS_CLUSTER="{\"workers\": [\"127.0.0.1:${ports[0]}\", \"127.0.0.1:${ports[1]}\"], \"index\": $i}" \
        "$training_bin" "${args[@]}" >"$out_dir/logs/distributed_training.$i.log" 2>&1 &
      names+=("distributed_training w$i") pids+=($!) logs+=("$out_dir/logs/distributed_training.$i.log")
    done
  else
    "$mpirun" --oversubscribe -np 2 "$training_bin" "${args[@]}" >"$out_dir/logs/distributed_training.log" 2>&1 &
    launcher=$!
    ranks=()
    for _ in $(seq 100); do  # mpirun starts the ranks as its children
      mapfile -t ranks < <(pgrep -P "$launcher" -f "$training_bin" || true)
      ((${#ranks[@]} == 2)) && break
      sleep 0.1
    done
    ((${#ranks[@]} == 2)) || die "mpirun did not start 2 ranks of $training_bin: $(tail -n 5 "$out_dir/logs/distributed_training.log")"
    declare -A rank_pid
    for pid in "${ranks[@]}"; do  # worker index = the rank, from its environment
      rank_pid[$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')]=$pid
    done
    for i in 0 1; do
      [[ -n ${rank_pid[$i]:-} ]] || die "no rank $i among mpirun's children ${ranks[*]}"
      names+=("distributed_training w$i") pids+=("${rank_pid[$i]}") logs+=("$out_dir/logs/distributed_training.log")
    done
  fi
  saver_log[distributed_training]=${logs[-2]}  # worker 0 saves (gloo: its own log; mpi: both ranks' log)
fi

# --- checkpoints: each new version of a program's checkpoint file is linked, listed and verified
declare -A last_inode caught verified failed steps
check_new_checkpoints() {
  local prog file inode link out
  for prog in "${!ckdir[@]}"; do
    file=${ckdir[$prog]}/checkpoint.plxckpt
    inode=$(stat -c %i "$file" 2>/dev/null) || continue
    [[ $inode == "${last_inode[$prog]:-}" ]] && continue
    link=$out_dir/caught/$prog.$((${caught[$prog]:-0} + 1)).plxckpt
    ln -f "$file" "$link" 2>/dev/null || continue  # replaced between stat and ln: next second
    last_inode[$prog]=$(stat -c %i "$link")
    caught[$prog]=$((${caught[$prog]:-0} + 1))
    if out=$("$ckpt_bin" verify "$link" 2>&1); then
      verified[$prog]=$((${verified[$prog]:-0} + 1))
      steps[$prog]+="${steps[$prog]:+ }$("$ckpt_bin" list "$link" | sed -n 's/.*, step \([0-9]*\),.*/\1/p')"
      rm -f "$link"
    else
      failed[$prog]+="$out"$'\n'  # the file stays in caught/
    fi
  done
}
# Not anchored: under mpirun stdout is a terminal, so each save line follows the progress bar's "\r\033[K".
saves_of() { grep -ac 'checkpoint: step [0-9]* (epoch [0-9]*, run [0-9]* next) saved' "${saver_log[$1]}" || true; }
last_saved_epoch() {  # the epoch (from 1) of the program's last save line, 0 without one
  local e
  e=$(sed -n 's/.*checkpoint: step [0-9]* (epoch \([0-9]*\), run [0-9]* next) saved.*/\1/p' "${saver_log[$1]}" | tail -n 1)
  echo "${e:-0}"
}
warm=1  # 1 during the warm-up
warmed_up() {  # true once the warm-up is over (WARMUP=auto: every program saved twice, the last past epoch 1)
  local t=$1 prog
  if [[ $warmup != auto ]]; then ((t >= warmup)); return; fi
  for prog in "${programs[@]}"; do
    (($(saves_of "$prog") >= 2 && $(last_saved_epoch "$prog") >= 2)) || return 1
  done
}

# --- samples: rows[k] of "t rss_kb fds threads" per process, in $out_dir/samples.tsv
saving() {  # true while some program writes a checkpoint (its temporary file exists)
  local prog
  for prog in "${!ckdir[@]}"; do compgen -G "${ckdir[$prog]}/checkpoint.plxckpt.tmp-*" >/dev/null && return 0; done
  return 1
}
inodes() { local p; for p in "${!ckdir[@]}"; do stat -c %i "${ckdir[$p]}/checkpoint.plxckpt" 2>/dev/null || echo -; done; }
read_proc() {  # read_proc PID: "rss_kb fds threads", or "" when it has ended (a zombie has no VmRSS)
  local rss threads fds
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null) || return 0
  threads=$(awk '/^Threads:/ {print $2}' "/proc/$1/status" 2>/dev/null) || return 0
  fds=$(find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
  if [[ -n $rss ]]; then echo "$rss $fds $threads"; fi
}
take_sample() {  # take_sample T: one row; "*" marks a sample taken during a save (gave up waiting 5 s)
  local t=$1 k before row mark="*" phase=soak
  ((warm == 1)) && warmed_up "$t" && warm=0 && warm_end=$t
  ((warm == 1)) && phase=warmup
  for _ in $(seq 50); do
    if saving; then sleep 0.1; continue; fi
    before=$(inodes)
    row=()
    for k in "${!pids[@]}"; do row+=("$(read_proc "${pids[$k]}")"); done
    if ! saving && [[ $(inodes) == "$before" ]]; then mark=""; break; fi
    sleep 0.1
  done
  [[ -n $mark ]] && row=() && for k in "${!pids[@]}"; do row+=("$(read_proc "${pids[$k]}")"); done
  local line rss fds threads
  line=$(awk -v t="$t" 'BEGIN { printf "%6d %5.1f", t, t / 60 }')
  for k in "${!pids[@]}"; do
    if [[ -z ${row[k]} ]]; then  # it has ended: the main loop stops at its next look
      line+=$(printf ' | %-23s' "(ended)")
      continue
    fi
    read -r rss fds threads <<<"${row[$k]}"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "${names[$k]}" "$rss" "$fds" "$threads" "$phase" >>"$out_dir/samples.tsv"
    line+=$(awk -v r="$rss" -v f="$fds" -v n="$threads" 'BEGIN { printf " | %13.2f %4d %4d", r / 1024, f, n }')
  done
  local ck="" prog
  for prog in "${programs[@]}"; do ck+=" ${verified[$prog]:-0}/$(saves_of "$prog")"; done
  [[ $phase == warmup ]] && mark+=" warm-up"
  echo "$line |$ck$mark"
}

# --- the run
what=""
for prog in "${programs[@]}"; do
  [[ $prog == distributed_training ]] && prog="distributed_training (2 workers, $engine)"
  what+="${what:+ and }$prog"
done
((${#programs[@]} == 1)) || what+=" side by side"
echo "soak: $what for ${duration}s;"
[[ $warmup == auto ]] && warmup_text="until 2 checkpoints each, past epoch 1" || warmup_text="${warmup}s"
echo "      a checkpoint every ${ckpt_interval}s, a sample every ${sample_interval}s, warm-up $warmup_text;" \
  "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "      logs, checkpoints and samples.tsv in $out_dir"
header=$(printf '%6s %5s' "t (s)" "min")
sub=$(printf '%6s %5s' "" "")
for k in "${!pids[@]}"; do
  header+=$(printf ' | %-23s' "${names[$k]}")
  sub+=$(printf ' | %13s %4s %4s' "RSS MiB" "fds" "thr")
done
echo "$header | checkpoints"
echo "$sub | verified/saved"
SECONDS=0
next_sample=$sample_interval
warm_end=""
early_end=""
while ((SECONDS < duration || next_sample <= duration)); do  # the last sample at DURATION
  check_new_checkpoints
  for k in "${!pids[@]}"; do
    if ! kill -0 "${pids[$k]}" 2>/dev/null; then
      code=0
      wait "${pids[$k]}" 2>/dev/null || code=$?  # 127: not this shell's child (an mpirun rank)
      early_end="${names[$k]} (pid ${pids[$k]}) ended at ${SECONDS}s, before the end of the soak"
      ((code == 127)) || early_end+=" (exit status $code)"
      break 2
    fi
  done
  if ((SECONDS >= next_sample)); then
    take_sample "$next_sample"
    next_sample=$((next_sample + sample_interval))
  fi
  sleep 1
done
stop_all
pids=() launcher=""
trap - EXIT
check_new_checkpoints

# --- the verdict
failures=() inconclusive=()
if [[ -n $early_end ]]; then
  failures+=("$early_end")
  for log in $(printf '%s\n' "${logs[@]}" | sort -u); do
    echo "== tail of $log" >&2
    tail -n 15 "$log" >&2
  done
fi
echo
if [[ -n $warm_end ]]; then
  echo "verdict (the samples from ${warm_end}s on, after the warm-up):"
else
  echo "verdict: the warm-up did not end before ${duration}s"
  inconclusive+=("the warm-up ($warmup_text) did not end before DURATION (a slow or busy machine: make DURATION longer)")
fi
declare -A seen_name
for name in "${names[@]}"; do
  [[ -n ${seen_name[$name]:-} ]] && continue
  seen_name[$name]=1
  summary=$(awk -F'\t' -v n="$name" -v max="$max_growth" '
    $2 == n && $6 == "soak" {
      if (count++ == 0) { first = $3; t0 = $1; fmin = fmax = $4; tmin = tmax = $5; step = 0 }
      else if ($3 - last > step) step = $3 - last
      last = $3; t1 = $1
      if ($4 < fmin) fmin = $4; if ($4 > fmax) fmax = $4
      if ($5 < tmin) tmin = $5; if ($5 > tmax) tmax = $5
    }
    END {
      if (count < 2) { printf "FEW\tonly %d sample(s) after the warm-up\n", count; exit }
      growth = 100 * (last - first) / first
      trend = 100 * (last - first - step) / first
      fail = ""
      if (trend >= max) fail = fail sprintf("RSS grew %.2f%% besides its largest step (>= %s%%); ", trend, max)
      if (fmin != fmax) fail = fail sprintf("open fds varied between %d and %d; ", fmin, fmax)
      if (tmin != tmax) fail = fail sprintf("threads varied between %d and %d; ", tmin, tmax)
      printf "%s\tRSS %.2f -> %.2f MiB (%+.2f%%; %+.2f%% besides the largest step, %.2f MiB; %ds to %ds, %d samples), fds %s, threads %s\n", \
        (fail == "" ? "ok" : "FAIL"), first / 1024, last / 1024, growth, trend, step / 1024, t0, t1, count, \
        (fmin == fmax ? fmin " constant" : fmin ".." fmax), (tmin == tmax ? tmin " constant" : tmin ".." tmax)
      if (fail != "") printf "\t%s\n", fail
    }' "$out_dir/samples.tsv")
  status=${summary%%$'\t'*}
  rest=${summary#*$'\t'}
  printf '  %-24s %s\n' "$name:" "${rest//$'\t'/ }"
  case $status in
    ok) ;;
    FEW) inconclusive+=("$name: $rest") ;;
    *) failures+=("$name: ${rest//$'\n'/ }") ;;
  esac
done
# A save comes after the first run that ends past the interval, so the intervals run a
# little long (measured: 44 saves in 240 s at 5 s): allow 10 % per interval.
min_saves=$((duration * 10 / (ckpt_interval * 11) - 1))
for prog in "${programs[@]}"; do
  saves=$(saves_of "$prog")
  line="${caught[$prog]:-0} caught, ${verified[$prog]:-0} verified by plexus-ckpt verify, $saves saves printed"
  line+=" (steps: ${steps[$prog]:-none})"
  printf '  %-24s %s\n' "$prog checkpoints:" "$line"
  if [[ -n ${failed[$prog]:-} ]]; then
    failures+=("$prog: a checkpoint failed verification (kept in $out_dir/caught): ${failed[$prog]}")
  fi
  ((${caught[$prog]:-0} >= saves)) || failures+=("$prog: $saves checkpoints saved but only ${caught[$prog]:-0} caught")
  ((saves >= min_saves)) || failures+=("$prog: $saves checkpoints saved, expected at least $min_saves")
done
if ((${#failures[@]} > 0)); then
  printf 'soak: FAIL: %s\n' "${failures[@]}" >&2
  exit 1
fi
if ((${#inconclusive[@]} > 0)); then
  printf 'soak: INCONCLUSIVE: %s\n' "${inconclusive[@]}" >&2
  exit 3
fi
echo "soak: PASS: RSS growth under ${max_growth}% besides one step, descriptors and threads constant after warm-up, every checkpoint verified"
