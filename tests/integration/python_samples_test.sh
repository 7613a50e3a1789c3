#!/usr/bin/env bash
# Integration test of the Python samples (samples/python) against the C++ ones, on real MNIST:
#  (a) mnist_rts.py (seed 000) trains the same weights as samples/mnist_rts, byte for byte
#      (cmp of --weights-out), at R=2 batch 4 with --rts and at R=1 batch 8 without: same
#      graph, initial weights (cxx_random.py), data order and kernels (chosen by
#      shape, so every process picks the same ones);
#      it also prints the same test accuracy line and per-replica memory, and its --profile
#      writes the trace and a memory report with the C++ sample's peaks and variables;
#  (b) replica_groupings.py (seed 001) prints tables 13.1-13.3 as the seed has them, reads
#      listing 13.1's variables back in the shapes of their retrieval modes, and runs
#      listing 13.2 (remote variable with one group per replica, v += 1);
#  (c) mnist_pipeline.py (seed 003) trains (its mean loss falls below ln 10, the running
#      mean falls from run to run, the test accuracy is far above chance) and ends a short run with the C++ sample's
#      weights, byte for byte (cmp), for the same --seed, saving the same checkpoints on the
#      same steps (--checkpoint-every-seconds); its --profile writes each memory report
#      beside its trace, with the C++ sample's planned peaks.
# Under sanitizers (PLEXUS_SANITIZED=1) the runs are shorter. Python runs preload
# $PLEXUS_PYTHON_PRELOAD (libasan in the ASan build; the interpreter is not instrumented).
# Usage: python_samples_test.sh <mnist_rts> <mnist_pipeline> <python> <source dir> <data dir>
set -euo pipefail
rts_bin=$1
pipeline_bin=$2
python=$3
samples=$4/samples/python
data=$5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
py() {  # py SCRIPT ARGS...: runs a Python sample with the sanitizer runtime preloaded when there is one
  if [[ -n ${PLEXUS_PYTHON_PRELOAD:-} ]]; then
    LD_PRELOAD=$PLEXUS_PYTHON_PRELOAD ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 "$python" "$samples/$@"
  else
    "$python" "$samples/$@"
  fi
}
if [[ ${PLEXUS_SANITIZED:-0} == 1 ]]; then rts_steps=10 pipeline_steps=10; else rts_steps=50 pipeline_steps=20; fi

# --- (a) mnist_rts.py vs samples/mnist_rts
py mnist_rts.py --help | grep -- "--rts" >/dev/null || fail "mnist_rts.py --help does not list --rts"
set +e
py mnist_rts.py --data-dir "$data" --replication-factor 0 >"$tmp/out" 2>"$tmp/err"; code=$?
set -e
[[ $code == 2 ]] && grep -q "replication-factor must be >= 1" "$tmp/err" || fail "bad --replication-factor: $code $(cat "$tmp/err")"
compare_rts() {  # compare_rts NAME ARGS...
  local name=$1
  shift
  "$rts_bin" --data-dir "$data" --num-steps "$rts_steps" --weights-out "$tmp/$name.cpp.bin" \
    --profile --profile-dir "$tmp/$name.cpp.profile" "$@" >"$tmp/$name.cpp.out"
  py mnist_rts.py --data-dir "$data" --num-steps "$rts_steps" --weights-out "$tmp/$name.py.bin" \
    --metrics-out "$tmp/$name.py.json" --profile --profile-dir "$tmp/$name.py.profile" "$@" \
    >"$tmp/$name.py.out" 2>"$tmp/$name.py.err"
  cmp "$tmp/$name.cpp.bin" "$tmp/$name.py.bin" || fail "$name: mnist_rts.py's weights differ from mnist_rts's"
  "$python" "$(dirname "$0")/check_profile_files.py" mnist_rts.py "$tmp/$name.py.profile" training 1 "$tmp/$name.py.json"
  "$python" - "$tmp/$name.py.profile/training.memory.json" "$tmp/$name.cpp.profile/training.memory.json" <<'PY'
import json, sys
py, cpp = (json.load(open(p)) for p in sys.argv[1:3])
key = lambda r: [(d["planned_peak_bytes"], d["arena_bytes"], d["variables"]) for d in r["devices"]]
assert key(py) == key(cpp), (key(py), key(cpp))
print("ok: mnist_rts.py's memory report has mnist_rts's peaks, arenas and variable storage")
PY
  local cpp_line py_line
  cpp_line=$(grep "^test accuracy:" "$tmp/$name.cpp.out" | sed 's/, [0-9]* samples\/s)/)/')
  py_line=$(grep "^test accuracy:" "$tmp/$name.py.out" | sed 's/, [0-9]* samples\/s)/)/')
  [[ -n $cpp_line && $cpp_line == "$py_line" ]] || fail "$name: test lines differ: '$cpp_line' vs '$py_line'"
  diff <(grep -E "^  (W[01]|replica [0-9]+):" "$tmp/$name.cpp.out") <(grep -E "^  (W[01]|replica [0-9]+):" "$tmp/$name.py.out") ||
    fail "$name: the per-replica memory differs"
  echo "ok: $name: mnist_rts.py $* writes mnist_rts's weights byte for byte after $rts_steps steps; $py_line"
}
compare_rts r2_rts --replication-factor 2 --batch-size 4 --rts
compare_rts r1 --replication-factor 1 --batch-size 8
grep -q "^  W0: device 50176, remote buffer 0, sharded over 2" "$tmp/r2_rts.py.out" || fail "W0 is not sharded over 2"
grep -q "^  W1: device 0, remote buffer 640, sharded over 2" "$tmp/r2_rts.py.out" || fail "W1 is not in a remote buffer"

# --- (b) replica_groupings.py against seed 001's tables 13.1-13.3 and listings 13.1, 13.2
py replica_groupings.py >"$tmp/groupings.out"
"$python" - "$tmp/groupings.out" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
# Seed 001, 13.2: table 13.1 (group_size 4, stride 1), 13.2 (group_size 4, stride 4) and
# 13.3 (group_size 1; the seed shows groups 0, 1, 2, ..., 14, 15) of 16 replicas.
seed = {
    1: {0: [0, 1, 2, 3], 1: [4, 5, 6, 7], 2: [8, 9, 10, 11], 3: [12, 13, 14, 15]},
    2: {0: [0, 4, 8, 12], 1: [1, 5, 9, 13], 2: [2, 6, 10, 14], 3: [3, 7, 11, 15]},
    3: {g: [g] for g in range(16)},
}
for number, expected in seed.items():
    block = re.search(rf"^Table 13\.{number}:.*?\n  Group \| Replicas\n((?:  +\d+ \| .*\n)+)", text, re.M)
    assert block, f"table 13.{number} not printed"
    rows = {int(g): [int(r) for r in rs.split(", ")] for g, rs in re.findall(r"^ +(\d+) \| (.*)$", block.group(1), re.M)}
    assert rows == expected, (number, rows)
    print(f"ok: table 13.{number} is the seed's ({len(rows)} groups)")
shapes = {m[0]: m[2] for m in re.findall(r"^  (tensor_\w+): (.*?): read back (\[[\d, ]+\])", text, re.M)}
expected = {"tensor_1": "[3, 3]", "tensor_2": "[8, 3, 3]", "tensor_3": "[4, 3, 3]", "tensor_3b": "[4, 3, 3]",
            "tensor_4": "[8, 3, 3]", "tensor_5": "[8, 3, 3]"}
assert shapes == expected, shapes
assert "tensor_4: group_size 2, stride 1, 4 groups, all_replicas: read back [8, 3, 3]; rows from groups [0, 0, 1, 1, 2, 2, 3, 3]" in text
assert "tensor_5: group_size 4, stride 2, 2 groups, all_replicas: read back [8, 3, 3]; rows from groups [0, 1, 0, 1, 0, 1, 0, 1]" in text
print("ok: listing 13.1 reads back [num_groups] + base (one_per_group) and [R] + base (all_replicas)")
assert "group 0 (replica 0): before [0, 1, 2, 3] ... 31, after v += 1: [1, 2, 3, 4] ... 32" in text, text
assert "group 1 (replica 1): before [32, 33, 34, 35] ... 63, after v += 1: [33, 34, 35, 36] ... 64" in text, text
print("ok: listing 13.2 adds 1 to each group's slot of the remote variable")
PY

# --- (c) mnist_pipeline.py vs samples/mnist_pipeline, a short run (saving a checkpoint after
# every run: --checkpoint-every-seconds shorter than any run)
"$pipeline_bin" --data-dir "$data" --epochs 1 --num-steps "$pipeline_steps" --seed 0 --weights-out "$tmp/cnn.cpp.bin" \
  --metrics-out "$tmp/cnn.cpp.json" --checkpoint-dir "$tmp/ck" --checkpoint-every-seconds 0.000001 >"$tmp/cnn.cpp.out"
py mnist_pipeline.py --data-dir "$data" --epochs 1 --num-steps "$pipeline_steps" --seed 0 --weights-out "$tmp/cnn.py.bin" \
  --metrics-out "$tmp/cnn.py.json" --checkpoint-dir "$tmp/ck" --checkpoint-every-seconds 0.000001 \
  --profile --profile-dir "$tmp/pyprofile" >"$tmp/cnn.py.out" 2>"$tmp/cnn.py.err"
"$pipeline_bin" --data-dir "$data" --epochs 1 --num-steps 10 --seed 0 --profile --profile-dir "$tmp/cppprofile" >/dev/null
"$python" - "$tmp/pyprofile" "$tmp/cppprofile" <<'PY'
import json, sys
for name in ("training", "inference"):
    py, cpp = (json.load(open(f"{d}/{name}.memory.json")) for d in sys.argv[1:3])
    assert py["schema"] == "plexus.memory_report", py.keys()
    peaks = [d["planned_peak_bytes"] for d in py["devices"]]
    assert peaks == [max(sum(s["bytes"].values()) for s in d["steps"]) for d in py["devices"]], name
    assert peaks == [d["planned_peak_bytes"] for d in cpp["devices"]], (name, peaks)
print("ok: mnist_pipeline.py --profile writes the memory reports beside its traces, the C++ sample's peaks")
PY
tail -n 1 "$tmp/cnn.py.out"
diff <(grep "^checkpoint: " "$tmp/cnn.cpp.out") <(grep "^checkpoint: " "$tmp/cnn.py.out") ||
  fail "mnist_pipeline.py's checkpoint lines differ from mnist_pipeline's"
[[ $(grep -c "^checkpoint: step" "$tmp/cnn.py.out") == $((pipeline_steps / 10)) ]] ||
  fail "mnist_pipeline.py did not save after each of its $((pipeline_steps / 10)) runs: $(grep checkpoint "$tmp/cnn.py.out")"
"$python" - "$tmp/cnn.cpp.json" "$tmp/cnn.py.json" "$tmp/cnn.py.err" <<'PY'
import json, math, re, sys
cpp, py = (json.load(open(p)) for p in sys.argv[1:3])
# The bar's running mean loss after each session run (10 weight updates): it falls when
# each run's loss is below the runs' before it.
running = [float(x) for x in re.findall(r"^epoch 1/1 .*Loss:([\d.]+)", open(sys.argv[3]).read(), re.M)]
assert all(b < a for a, b in zip(running, running[1:])), f"the running loss does not fall: {running}"
# Chance is ln 10 = 2.30 (the first micro-batches' loss); 10 updates bring the mean to 2.03.
assert py["train_loss"] < math.log(10) - 0.2, f"mean train loss {py['train_loss']:.4f}: not training"
assert py["test_accuracy"] > 0.5, f"test accuracy {py['test_accuracy']:.4f}"
for key in ("train_loss", "train_accuracy", "test_accuracy", "weight_updates", "device_memory"):
    assert py[key] == cpp[key], (key, py[key], cpp[key])
print(f"ok: mnist_pipeline.py trains (mean loss {py['train_loss']:.4f} < ln 10 - 0.2; running mean {running}) "
      f"and equals mnist_pipeline's loss {cpp['train_loss']:.4f}, test accuracy {100 * cpp['test_accuracy']:.2f}% and device memory")
PY
cmp "$tmp/cnn.cpp.bin" "$tmp/cnn.py.bin" || fail "mnist_pipeline.py's weights differ from mnist_pipeline's"
echo "ok: mnist_pipeline.py writes mnist_pipeline's weights byte for byte after $pipeline_steps weight updates"
