#!/usr/bin/env bash
# Integration test of samples/mnist_rts (seed 000) on real MNIST:
#  - the seed's two command lines, --replication-factor 2 --batch-size 4 and
#    --replication-factor 1 --batch-size 8, with and without --rts, end 500 steps with the
#    same weights within 1e-5 (max abs);
#  - with --rts at R=2 each replica keeps half of W0 (device) and of W1 (remote buffer);
#  - the main job (scripts/demo.sh: R=2, batch 4, --rts) reaches >= 92.0% test accuracy
#    after one epoch;
#  - bad command lines are clear errors.
# Usage: mnist_rts_sample_test.sh <mnist_rts binary> <data dir>
set -euo pipefail
bin=$1
data=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin" --help | grep -- "--rts" >/dev/null || fail "--help does not list --rts"
set +e
"$bin" --replication-factor 0 >"$tmp/out" 2>"$tmp/err"; code=$?
set -e
[[ $code == 2 ]] && grep -q "replication-factor must be >= 1" "$tmp/err" || fail "bad --replication-factor: $code $(cat "$tmp/err")"

run() {  # run NAME ARGS...
  local name=$1
  shift
  "$bin" --data-dir "$data" --num-steps 500 --weights-out "$tmp/$name.bin" --metrics-out "$tmp/$name.json" "$@" |
    grep -E "^  W[01]:|^train session" || true
}
run r2_rts --replication-factor 2 --batch-size 4 --rts
run r2 --replication-factor 2 --batch-size 4
run r1_rts --replication-factor 1 --batch-size 8 --rts
run r1 --replication-factor 1 --batch-size 8

python3 - "$tmp" <<'PY'
import json, sys
from array import array
tmp = sys.argv[1]
def weights(name):
    a = array("f")
    a.frombytes(open(f"{tmp}/{name}.bin", "rb").read())
    return a
base = weights("r1")
assert len(base) == 784 * 32 + 32 + 32 * 10 + 10
for name in ("r2_rts", "r2", "r1_rts"):
    worst = max(abs(x - y) for x, y in zip(weights(name), base))
    assert worst <= 1e-5, f"{name} differs from r1 by {worst} after 500 steps"
    print(f"ok: {name} weights equal r1's within {worst:.2e} after 500 steps")
rts = json.load(open(f"{tmp}/r2_rts.json"))["memory"]
plain = json.load(open(f"{tmp}/r2.json"))["memory"]
assert rts["W0"]["device_bytes"] * 2 == plain["W0"]["device_bytes"], (rts, plain)
assert rts["W1"]["remote_bytes"] * 2 == plain["W1"]["device_bytes"], (rts, plain)
assert rts["W1"]["device_bytes"] == 0
for r in rts["replicas"]:
    assert r["remote_buffer_bytes"] == 32 * 10 * 4 // 2
print("ok: with --rts at R=2 each replica keeps half of W0 (%d of %d bytes) and of W1 (%d of %d bytes)" % (
    rts["W0"]["device_bytes"], plain["W0"]["device_bytes"], rts["W1"]["remote_bytes"], plain["W1"]["device_bytes"]))
PY

"$bin" --data-dir "$data" --replication-factor 2 --batch-size 4 --rts --metrics-out "$tmp/main.json" | tail -n 1
python3 - "$tmp/main.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
assert m["rts"] is True and m["replication_factor"] == 2
assert m["test_accuracy"] >= 0.92, f"test accuracy {m['test_accuracy']:.4f} < 0.92"
print(f"ok: main job test accuracy {m['test_accuracy']:.4f} >= 0.92")
PY
