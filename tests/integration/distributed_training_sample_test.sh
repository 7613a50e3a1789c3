#!/usr/bin/env bash
# Integration test of samples/distributed_training (seed 002) on real MNIST, with mpirun:
#  - 2 workers x 1 replica train to the same weights, bit for bit, as 1 worker x 2 replicas
#    (member-order reductions, the loader's shards); 2 workers x 2 replicas as 1 x 4;
#    3 workers x 1 replica as 1 x 3;
#  - 1 worker x 1 replica with 128 samples per update as 2 accumulated micro-batches of 64
#    (--gradient-accumulation 2) trains to the weights of 2 x 1 bit for bit;
#  - 1 worker x 1 replica at micro-batch 128 within 1e-5 (max abs) of 2 x 1 at batch 64
#    after 30 steps (one GEMM sums the 128 samples in another order; Adam amplifies that
#    rounding with more steps);
#  - --host-update (the weight update on the hosts, seed 002's variables_on_host) trains to
#    the same weights bit for bit as the update on the devices: 2 x 1, 1 x 2, 3 x 1;
#  - --model-dir: 20 steps, then resumed to 30 on 2 workers, equals 30 steps straight, bit
#    for bit, with either update;
#  - bad command lines are clear errors.
# Nothing is pinned for the bit-for-bit comparisons: every process picks the same GEMM kernels
# for a shape (by rule, core/ops/matmul/gemm.cpp) and the thread count does not change the bits;
# --threads-per-device 1 keeps two workers from oversubscribing the cores.
# Usage: distributed_training_sample_test.sh <binary> <data dir> <mpirun>
set -euo pipefail
bin=$1
data=$2
mpirun=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

"$bin" --help | grep -- "--replication-factor" >/dev/null || fail "--help does not list --replication-factor"
set +e
"$bin" --num-steps 0 >"$tmp/out" 2>"$tmp/err"; code=$?
set -e
[[ $code == 2 ]] && grep -q "num-steps must be >= 1" "$tmp/err" || fail "bad --num-steps: $code $(cat "$tmp/err")"

run() {  # [STEPS=N] run NAME WORKERS ARGS...  (30 steps unless STEPS is set)
  local name=$1 workers=$2
  shift 2
  local launch=()
  [[ $workers -gt 1 ]] && launch=("$mpirun" --oversubscribe -np "$workers")
  "${launch[@]}" "$bin" --data-dir "$data" --num-steps "${STEPS:-30}" --skip-test --threads-per-device 1 \
    --weights-out "$tmp/$name.bin" "$@" |
    grep -E "^trained" || fail "$name did not train"
}
run w2r1 2
run w1r2 1 --replication-factor 2
run w2r2 2 --replication-factor 4
run w1r4 1 --replication-factor 4
run w3r1 3
run w1r3 1 --replication-factor 3
run w1r1_b128 1 --batch-size 128
cmp "$tmp/w2r1.bin" "$tmp/w1r2.bin" || fail "2 workers x 1 replica differ from 1 worker x 2 replicas"
cmp "$tmp/w2r2.bin" "$tmp/w1r4.bin" || fail "2 workers x 2 replicas differ from 1 worker x 4 replicas"
cmp "$tmp/w3r1.bin" "$tmp/w1r3.bin" || fail "3 workers x 1 replica differ from 1 worker x 3 replicas"
echo "ok: 2x1 = 1x2, 2x2 = 1x4, 3x1 = 1x3 bit for bit after 30 steps"
run w1r1_ga2 1 --gradient-accumulation 2
cmp "$tmp/w1r1_ga2.bin" "$tmp/w2r1.bin" || fail "1 replica accumulating 2 micro-batches of 64 differs from 2 workers"
echo "ok: 1 replica x 2 accumulated micro-batches of 64 = 2 workers x 64 bit for bit"

run w2r1_host 2 --host-update
run w1r2_host 1 --replication-factor 2 --host-update
run w3r1_host 3 --host-update
cmp "$tmp/w2r1_host.bin" "$tmp/w2r1.bin" || fail "2 workers: the update on the hosts differs from the devices'"
cmp "$tmp/w1r2_host.bin" "$tmp/w1r2.bin" || fail "1 worker x 2 replicas: the update on the host differs"
cmp "$tmp/w3r1_host.bin" "$tmp/w3r1.bin" || fail "3 workers: the update on the hosts differs from the devices'"
echo "ok: --host-update equals the update on the devices bit for bit (2x1, 1x2, 3x1)"

STEPS=20 run resumed 2 --model-dir "$tmp/model"
run resumed 2 --model-dir "$tmp/model"
cmp "$tmp/resumed.bin" "$tmp/w2r1.bin" || fail "20 steps resumed to 30 differ from 30 steps straight"
STEPS=20 run resumed_host 2 --model-dir "$tmp/model_host" --host-update
run resumed_host 2 --model-dir "$tmp/model_host" --host-update
cmp "$tmp/resumed_host.bin" "$tmp/w2r1.bin" || fail "--host-update: 20 steps resumed to 30 differ from 30 straight"
echo "ok: 2 workers resumed from --model-dir at step 20 end where 30 steps straight end"

python3 - "$tmp" <<'PY'
import sys
from array import array
tmp = sys.argv[1]
def weights(name):
    a = array("f")
    a.frombytes(open(f"{tmp}/{name}.bin", "rb").read())
    return a
a, b = weights("w2r1"), weights("w1r1_b128")
assert len(a) == 32 * 9 + 32 + 5408 * 64 + 64 + 640 + 10
worst = max(abs(x - y) for x, y in zip(a, b))
assert worst <= 1e-5, f"1 worker at batch 128 differs from 2 workers at batch 64 by {worst} after 30 steps"
print(f"ok: 1 worker x 1 replica at batch 128 within {worst:.2e} of 2 workers x 1 replica after 30 steps")
PY
