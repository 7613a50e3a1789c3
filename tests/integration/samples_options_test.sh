#!/usr/bin/env bash
# The samples speak one dialect (samples/common/options.h), checked on all five:
#  - --help lists every common option;
#  - a bad value (unknown --dataset, negative --num-steps, --learning-rate 0, a --data-dir
#    without the dataset, a zero --batch-size) exits 2 with "<sample>: error: " and the
#    option's name on stderr;
#  - --device-memory-limit below the program's planned memory is refused when the session
#    compiles, before any step, naming the largest tensors live at the peak;
#  - a few steps on Fashion-MNIST (--dataset fashion) train, read data/fashion-mnist and
#    write the dataset and step limit to the metrics; with --profile each writes the Chrome
#    trace and the memory report beside it (check_profile_files.py: both parse, each
#    device's largest step is its planned peak);
#  - seed 003's --learning-rate 0.002 --debug --epochs 5 runs;
#  - seed 002's --model-dir resumes in a sample that is not seed 002's.
# Usage: samples_options_test.sh <mnist> <mnist_rts> <mnist_pipeline> <distributed_training> <stream_demo> <data dir>
set -euo pipefail
declare -A bin=([mnist]=$1 [mnist_rts]=$2 [mnist_pipeline]=$3 [distributed_training]=$4 [stream_demo]=$5)
data=$6
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
[[ -e $data/fashion-mnist/train-images-idx3-ubyte.gz || -e $data/fashion-mnist/train-images-idx3-ubyte ]] ||
  fail "Fashion-MNIST not found in $data/fashion-mnist: run scripts/fetch-data.sh"

common=(--help --dataset --data-dir --num-steps --batch-size --device-iterations --learning-rate
        --replication-factor --seed --metrics-out --device-memory-limit --profile --profile-dir)
# Devices per replica of each sample's training session (its memory report's devices).
declare -A devices=([mnist]=1 [mnist_rts]=1 [mnist_pipeline]=4 [distributed_training]=1 [stream_demo]=1)
# A few steps of each on Fashion-MNIST.
declare -A short=(
  [mnist]="--num-steps 20"
  [mnist_rts]="--num-steps 20 --replication-factor 2 --batch-size 4 --rts"
  [mnist_pipeline]="--num-steps 2 --device-iterations 1"
  [distributed_training]="--num-steps 10 --threads-per-device 1"
  [stream_demo]="--num-steps 20"
)

# expect_usage_error SAMPLE MESSAGE ARGS...: exit status 2 and MESSAGE on stderr.
expect_usage_error() {
  local name=$1 message=$2
  shift 2
  set +e
  "${bin[$name]}" "$@" >"$tmp/out" 2>"$tmp/err"
  local code=$?
  set -e
  [[ $code == 2 ]] || fail "$name $*: exit $code, expected 2: $(cat "$tmp/err")"
  grep -q -- "^$name: error: .*$message" "$tmp/err" || fail "$name $*: stderr lacks '$message': $(cat "$tmp/err")"
}

for name in mnist mnist_rts mnist_pipeline distributed_training stream_demo; do
  "${bin[$name]}" --help >"$tmp/help" || fail "$name --help exited $?"
  for option in "${common[@]}"; do
    grep -q -- "$option\b" "$tmp/help" || fail "$name --help does not list $option"
  done
  expect_usage_error "$name" "--dataset must be 'mnist' or 'fashion', got 'cifar'" --data-dir "$data" --dataset cifar
  expect_usage_error "$name" "--num-steps must be >= [01], got -1" --data-dir "$data" --num-steps -1
  expect_usage_error "$name" "--learning-rate must be > 0" --data-dir "$data" --learning-rate 0
  expect_usage_error "$name" "--batch-size must be >= 1, got 0" --data-dir "$data" --batch-size 0
  expect_usage_error "$name" "--data-dir '$tmp/nowhere' holds no fashion data" --data-dir "$tmp/nowhere" \
    --dataset fashion
  expect_usage_error "$name" "unrecognised option\|unrecognized option" --data-dir "$data" --no-such-option
  expect_usage_error "$name" "--device-memory-limit must be a number of bytes, optionally followed by K, M or G" \
    --data-dir "$data" --device-memory-limit 12X
  expect_usage_error "$name" "--profile-dir must name a folder, got ''" --data-dir "$data" --profile --profile-dir ""
  echo "ok: $name lists the common options and rejects bad values with exit 2"

  # shellcheck disable=SC2086  # the short options split into words on purpose
  if "${bin[$name]}" --data-dir "$data" ${short[$name]} --device-memory-limit 64K >"$tmp/out" 2>"$tmp/err"; then
    fail "$name --device-memory-limit 64K ran: $(tail -n 3 "$tmp/out")"
  fi
  grep -q "capacity (device_memory_bytes) is 65536; the largest tensors live at its peak: '" "$tmp/err" ||
    fail "$name --device-memory-limit 64K: $(cat "$tmp/err")"
  echo "ok: $name refuses --device-memory-limit 64K when compiling: $(grep -o "device 0 needs [0-9]* bytes" "$tmp/err")"

  # shellcheck disable=SC2086  # the short options split into words on purpose
  "${bin[$name]}" --data-dir "$data" --dataset fashion ${short[$name]} --metrics-out "$tmp/$name.json" \
    --profile --profile-dir "$tmp/$name.profile" >"$tmp/$name.log" ||
    fail "$name --dataset fashion exited $?: $(tail -n 5 "$tmp/$name.log")"
  grep -q "$data/fashion-mnist" "$tmp/$name.log" || fail "$name did not read $data/fashion-mnist"
  grep -q "^training profile: $tmp/$name.profile/training.json .*memory report beside it: $tmp/$name.profile/training.memory.json" \
    "$tmp/$name.log" || fail "$name --profile did not print the paths: $(grep profile "$tmp/$name.log")"
  python3 "$(dirname "$0")/check_profile_files.py" "$name" "$tmp/$name.profile" training "${devices[$name]}" \
    "$tmp/$name.json"
  python3 - "$tmp/$name.json" "$name" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
options = m.get("options", m)  # stream_demo nests its options
assert options["dataset"] == "fashion", options
# Steps trained: train_steps, or weight_updates (mnist_pipeline), or batches (stream_demo, one replica).
trained = m.get("train_steps", m.get("weight_updates", m.get("totals", {}).get("batches")))
assert trained == options["num_steps"] > 0, (trained, options)
print(f"ok: {sys.argv[2]} trained {trained} steps on Fashion-MNIST")
PY
done

# Seed 003's first example command line (the others are in mnist_pipeline_sample_test.sh),
# cut to one session run of 10 weight updates.
"${bin[mnist_pipeline]}" --data-dir "$data" --learning-rate 0.002 --debug --epochs 5 --num-steps 10 \
  >"$tmp/seed003.log" ||
  fail "seed 003's command line exited $?: $(tail -n 5 "$tmp/seed003.log")"
grep -q "AdamW lr 0.002" "$tmp/seed003.log" || fail "seed 003's --learning-rate 0.002 not taken"
echo "ok: seed 003's --learning-rate 0.002 --debug --epochs 5 runs"

# --model-dir (seed 002's checkpoint folder) in mnist: the second run resumes.
"${bin[mnist]}" --data-dir "$data" --num-steps 10 --model-dir "$tmp/model" >/dev/null
"${bin[mnist]}" --data-dir "$data" --num-steps 20 --model-dir "$tmp/model" >"$tmp/resumed.log"
grep -q "resumed from $tmp/model/checkpoint.plxckpt: step 10" "$tmp/resumed.log" ||
  fail "mnist --model-dir did not resume"
expect_usage_error mnist "--model-dir and --checkpoint-dir name the same folder" --data-dir "$data" \
  --model-dir "$tmp/model" --checkpoint-dir "$tmp/other"
echo "ok: --model-dir resumes from its checkpoint in mnist"
