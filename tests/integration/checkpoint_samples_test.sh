#!/usr/bin/env bash
# Checkpoints in the samples on real MNIST (issue 7): resuming is exact (the weights and
# the checkpoint file of N + N steps across two processes equal those of 2N steps in one),
# an R=2 RTS checkpoint of mnist_rts loads at R=1 and R=4 with the same test accuracy,
# --checkpoint-every-seconds saves on time, and the options are checked.
# Usage: checkpoint_samples_test.sh <mnist_rts> <mnist_pipeline> <data dir>
set -euo pipefail
rts=$1
pipeline=$2
data=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
if [[ ${PLEXUS_SANITIZED:-0} == 1 ]]; then steps=40 updates=4; else steps=400 updates=20; fi

# mnist_rts, R=2 with RTS: 2N steps in one process vs N, then --resume for N more.
common=(--data-dir "$data" --replication-factor 2 --batch-size 4 --rts --device-iterations 10 --test-batch-size 80)
"$rts" "${common[@]}" --num-steps $((2 * steps)) --checkpoint-dir "$tmp/once" --weights-out "$tmp/once.bin" \
  | tail -n 1 | tee "$tmp/once.txt"
"$rts" "${common[@]}" --num-steps "$steps" --checkpoint-dir "$tmp/twice" --checkpoint-every $((steps / 2)) >/dev/null
"$rts" "${common[@]}" --num-steps $((2 * steps)) --checkpoint-dir "$tmp/twice" --resume --weights-out "$tmp/twice.bin" \
  >"$tmp/resumed.txt"
grep -q "resumed from $tmp/twice/checkpoint.plxckpt: step $steps" "$tmp/resumed.txt" || fail "no resume line: $(cat "$tmp/resumed.txt")"
cmp "$tmp/once.bin" "$tmp/twice.bin" || fail "mnist_rts: resumed weights differ from uninterrupted training"
cmp "$tmp/once/checkpoint.plxckpt" "$tmp/twice/checkpoint.plxckpt" || fail "mnist_rts: the final checkpoints differ"
echo "ok: mnist_rts R=2 RTS, $steps + $steps steps across two processes equal $((2 * steps)) in one, bit for bit"

# The R=2 RTS checkpoint at R=1 and R=4 (same 9920 test images: 62 batches of 160).
accuracy() { grep -o "test accuracy: [0-9.]*%" "$1"; }
expected=$(accuracy "$tmp/once.txt")
for layout in "1 8 160" "4 2 40 --rts" "4 2 40"; do
  read -r r batch test_batch flag <<<"$layout"
  "$rts" --data-dir "$data" --replication-factor "$r" --batch-size "$batch" --test-batch-size "$test_batch" ${flag:-} \
    --num-steps $((2 * steps)) --checkpoint-dir "$tmp/once" --resume >"$tmp/r$r.txt"
  [[ $(accuracy "$tmp/r$r.txt") == "$expected" ]] || fail "R=$r ${flag:-}: $(accuracy "$tmp/r$r.txt"), R=2 gave $expected"
  echo "ok: the R=2 RTS checkpoint at R=$r ${flag:-} gives the same $expected"
done

# mnist_pipeline (AdamW state in the checkpoint): the same, with the state offloaded.
p=(--data-dir "$data" --epochs 1 --seed 0 --offload-optimiser --device-iterations 2)
"$pipeline" "${p[@]}" --num-steps $((2 * updates)) --checkpoint-dir "$tmp/p1" --weights-out "$tmp/p1.bin" >/dev/null
"$pipeline" "${p[@]}" --num-steps "$updates" --checkpoint-dir "$tmp/p2" >/dev/null
"$pipeline" "${p[@]}" --num-steps $((2 * updates)) --checkpoint-dir "$tmp/p2" --resume --weights-out "$tmp/p2.bin" >/dev/null
cmp "$tmp/p1.bin" "$tmp/p2.bin" || fail "mnist_pipeline: resumed weights differ"
cmp "$tmp/p1/checkpoint.plxckpt" "$tmp/p2/checkpoint.plxckpt" || fail "mnist_pipeline: the final checkpoints differ"
echo "ok: mnist_pipeline, $updates + $updates updates across two processes equal $((2 * updates)) in one, bit for bit"

# --checkpoint-every-seconds (wall time; bench/soak.sh): an interval shorter than any run
# saves after every run, an hour only at the end; every save prints its line.
"$rts" "${common[@]}" --num-steps 40 --checkpoint-dir "$tmp/timed" --checkpoint-every-seconds 0.000001 >"$tmp/timed.txt"
[[ $(grep -c "^checkpoint: step" "$tmp/timed.txt") == 4 ]] || fail "4 runs, 1 us apart: $(grep checkpoint: "$tmp/timed.txt")"
grep -q "^checkpoint: step 40 (epoch 1, run 4 next) saved to $tmp/timed/checkpoint.plxckpt$" "$tmp/timed.txt" ||
  fail "no save line for step 40: $(grep checkpoint: "$tmp/timed.txt")"
"$rts" "${common[@]}" --num-steps 40 --checkpoint-dir "$tmp/hourly" --checkpoint-every-seconds 3600 >"$tmp/hourly.txt"
[[ $(grep "^checkpoint: step" "$tmp/hourly.txt") == "checkpoint: step 40 (epoch 1, run 4 next) saved to $tmp/hourly/checkpoint.plxckpt" ]] ||
  fail "an hour apart, only the final save: $(grep checkpoint: "$tmp/hourly.txt")"
cmp "$tmp/timed/checkpoint.plxckpt" "$tmp/hourly/checkpoint.plxckpt" || fail "the final checkpoints differ"
echo "ok: --checkpoint-every-seconds saves after every run at 1 us, only at the end at 3600 s"

# Options and errors.
expect() {  # expect CODE MESSAGE ARGS...
  local code=$1 message=$2
  shift 2
  set +e
  "$rts" --data-dir "$data" "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  set -e
  [[ $got == "$code" ]] && grep -q -- "$message" "$tmp/err" || fail "$*: exit $got, $(cat "$tmp/err")"
}
expect 2 "--resume needs --checkpoint-dir" --resume
expect 2 "--checkpoint-every needs --checkpoint-dir" --checkpoint-every 10
expect 2 "--checkpoint-every must be >= 0" --checkpoint-dir "$tmp/x" --checkpoint-every -1
expect 2 "--checkpoint-every-seconds needs --checkpoint-dir" --checkpoint-every-seconds 60
expect 2 "--checkpoint-every-seconds must be >= 0" --checkpoint-dir "$tmp/x" --checkpoint-every-seconds -1
expect 2 "--checkpoint-every-seconds must be >= 0" --checkpoint-dir "$tmp/x" --checkpoint-every-seconds nan
expect 2 "--resume: no checkpoint in --checkpoint-dir '$tmp/none'" --checkpoint-dir "$tmp/none" --resume
expect 1 "was trained with --seed 42, not 7" --checkpoint-dir "$tmp/once" --resume --seed 7
echo "ok: checkpoint options are checked"
