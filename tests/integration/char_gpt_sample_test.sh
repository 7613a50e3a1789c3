#!/usr/bin/env bash
# Integration test of samples/char_gpt (issue 20) on a small model and a generated corpus:
#  - one device, 2 pipeline stages, 2 replicas, 2 replicas with the AdamW state replica-
#    sharded (--rts) and the state offloaded, all clipping to a global norm of 1 (each with
#    the same samples per step: batch
#    8 x accumulation 2, or batch 4 x 2 replicas x accumulation 2) end 12 steps with the
#    same weights within 1e-5 (dropout 0: the masks depend on the replica); RTS halves the
#    state each replica keeps, offloading moves all of it to the host;
#  - with dropout, 60 steps bring the validation loss from ln 256 = 5.55 nats/byte below
#    3.5 (the corpus repeats a few sentences), and --generate prints the sampled bytes;
#  - a checkpoint resume equals training straight, bit for bit (dropout on);
#  - --metrics-out holds the validation curve;
#  - bad command lines are clear errors (exit 2, naming the option);
#  - --profile (2 stages) writes the trace and the memory report beside it, each stage's
#    largest step its planned peak (check_profile_files.py).
# Usage: char_gpt_sample_test.sh <char_gpt binary>
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
for i in $(seq 1 300); do
  echo "The quick brown fox $i jumps over the lazy dog."
  echo "A journey of a thousand miles begins with a single step."
  echo "%"
done >"$tmp/corpus"

"$bin" --help | grep -- "--stages" >/dev/null || fail "--help does not list --stages"
expect_usage_error() {  # expect_usage_error MESSAGE ARGS...
  local message=$1
  shift
  set +e
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local code=$?
  set -e
  [[ $code == 2 ]] && grep -q -- "$message" "$tmp/err" || fail "$*: exit $code, $(cat "$tmp/err")"
}
expect_usage_error "--width must be a positive multiple of --heads (4), got 30" --corpus "$tmp/corpus" --width 30
expect_usage_error "--stages must divide --layers (4), got 3" --corpus "$tmp/corpus" --stages 3
expect_usage_error "--gradient-accumulation must be >= --stages (2)" --corpus "$tmp/corpus" --stages 2
expect_usage_error "--corpus '$tmp/nowhere' does not exist" --corpus "$tmp/nowhere"
expect_usage_error "--temperature must be > 0" --corpus "$tmp/corpus" --temperature 0

small=(--corpus "$tmp/corpus" --layers 2 --width 32 --heads 2 --context 16 --threads-per-device 1 --seed 3
       --eval-batches 2 --warmup-steps 2)
run() {  # run NAME ARGS...
  local name=$1
  shift
  "$bin" "${small[@]}" --generate 0 --weights-out "$tmp/$name.bin" --metrics-out "$tmp/$name.json" "$@" | tail -n 1
}
run one --dropout 0 --num-steps 12 --device-iterations 6 --batch-size 8 --gradient-accumulation 2
run one_unclipped --dropout 0 --num-steps 12 --device-iterations 6 --batch-size 8 --gradient-accumulation 2 --clip 0
run stages --dropout 0 --num-steps 12 --device-iterations 6 --batch-size 8 --gradient-accumulation 2 --stages 2 \
  --profile --profile-dir "$tmp/stages.profile"
python3 "$(dirname "$0")/check_profile_files.py" char_gpt "$tmp/stages.profile" training 2 "$tmp/stages.json"
run replicas --dropout 0 --num-steps 12 --device-iterations 6 --batch-size 4 --gradient-accumulation 2 \
  --replication-factor 2
run rts --dropout 0 --num-steps 12 --device-iterations 6 --batch-size 4 --gradient-accumulation 2 \
  --replication-factor 2 --rts
run offload --dropout 0 --num-steps 12 --device-iterations 6 --batch-size 8 --gradient-accumulation 2 \
  --offload-optimiser
expect_usage_error "--rts needs --replication-factor > 1" --corpus "$tmp/corpus" --rts
# A checkpoint resume equals training straight: 12 steps, or 6 saved and 6 resumed (data
# position, AdamW state, step count and so the schedule and the dropout masks all restored).
# The learning rate is constant after the warm-up (--min-lr-ratio 1): the cosine's end is
# --num-steps, which the first half stops at.
run straight --num-steps 12 --device-iterations 6 --batch-size 8 --min-lr-ratio 1
run first_half --num-steps 6 --device-iterations 6 --batch-size 8 --min-lr-ratio 1 --checkpoint-dir "$tmp/ckpt"
run resumed --num-steps 12 --device-iterations 6 --batch-size 8 --min-lr-ratio 1 --checkpoint-dir "$tmp/ckpt" \
  --resume
"$bin" "${small[@]}" --num-steps 60 --device-iterations 20 --batch-size 8 --eval-every 20 --generate 40 --min-lr-ratio 1 \
  --metrics-out "$tmp/learn.json" >"$tmp/learn.out"
grep -q -- "--- sampled (temperature 0.8) ---" "$tmp/learn.out" || fail "no sampled text: $(cat "$tmp/learn.out")"

python3 - "$tmp" <<'PY'
import json, sys
from array import array
tmp = sys.argv[1]
def weights(name):
    a = array("f")
    a.frombytes(open(f"{tmp}/{name}.bin", "rb").read())
    return a
base = weights("one")
params = 256 * 32 + 16 * 32 + 2 * (4 * 32 + 4 * (32 * 32 + 32) + 32 * 128 + 128 + 128 * 32 + 32) + 2 * 32 + 32 * 256
assert len(base) == params, (len(base), params)
for name, reference in (("stages", "one"), ("replicas", "one"), ("rts", "one"), ("offload", "one")):
    worst = max(abs(x - y) for x, y in zip(weights(name), weights(reference)))
    assert worst <= 1e-5, f"{name}: weights differ from one device's by {worst}"
    print(f"{name}: weights within {worst:.2e} of one device's ({reference})")
assert max(abs(x - y) for x, y in zip(weights("one_unclipped"), base)) > 1e-4, "--clip 1 clipped nothing"
assert weights("resumed") == weights("straight"), "the resumed weights differ from training straight"
print("resumed from a checkpoint at step 6: weights equal to training straight for 12 steps")
learn = json.load(open(f"{tmp}/learn.json"))
curve = [(v["step"], v["loss"]) for v in learn["validation"]]
assert [s for s, _ in curve] == [20, 40, 60], curve
assert curve[-1][1] < 3.5 and curve[-1][1] < curve[0][1], curve
print("validation loss (nats/byte):", ", ".join(f"step {s}: {l:.3f}" for s, l in curve))
memory = {name: json.load(open(f"{tmp}/{name}.json"))["memory"] for name in ("one", "replicas", "rts", "offload")}
state = 2 * 4 * len(base)  # exp_avg and exp_avg_sq, float32
assert memory["offload"][0]["offloaded_bytes"] >= state, memory["offload"]
assert memory["one"][0]["variable_bytes"] - memory["offload"][0]["variable_bytes"] >= state
saved = memory["replicas"][0]["variable_bytes"] - memory["rts"][0]["variable_bytes"]
assert abs(saved - state / 2) <= 0.01 * state, (saved, state)  # each replica keeps half the state
print(f"AdamW state {state} B: offloaded to the host, or halved per replica by RTS (saves {saved} B)")
PY
echo "char_gpt sample: OK"
