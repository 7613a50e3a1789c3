#!/usr/bin/env bash
# PopXL's own MNIST programs (the PopXL user guide's mnist.py and mnist_rts.py, Graphcore's
# popart repository, docs/popxl/files) run unmodified on Plexus through `import popxl`, next
# to their PyTorch twin (bench/pytorch_mlp.py: the same model, initialisation scale, SGD
# and batch, and the scripts' data pipeline: torchvision's MNIST through a DataLoader), all
# in one run on this machine: one epoch's training seconds as each program's own timer
# prints them, training samples/s, test accuracy, and the ratio to that twin. The twin with
# the data preloaded as tensors is shown too, against the same twin. Graphcore's scripts are not part of this repository: pass the directory that
# holds them. Needs `scripts/install-deps.sh --bench` (python3-torch, -torchvision, -tqdm).
# Usage: bench/popxl_mnist.sh POPXL_FILES_DIR   (env: BUILD_DIR, default build-test)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
if [[ $# -ne 1 || ${1:-} == --help || ! -f ${1:-}/mnist_rts.py ]]; then
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
  [[ ${1:-} == --help ]] && exit 0
  echo "popxl_mnist.sh: give the directory holding PopXL's mnist.py, mnist_rts.py and mnist_utils.py" >&2
  exit 2
fi
files=$(cd "$1" && pwd)
build_dir=${BUILD_DIR:-$root/build-test}
bash "$root/scripts/fetch-data.sh" >/dev/null
export PYTHONPATH=$build_dir/python PLEXUS_PLUGIN_PATH=$build_dir/lib BLIS_NUM_THREADS=${BLIS_NUM_THREADS:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "machine: $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-58s %10s %12s %9s %8s\n' program train_s samples/s test_acc vs_torch
run_popxl() {  # run_popxl <label> <script> <args...>: one line of the table (ratio filled in later)
  local label=$1 script=$2
  shift 2
  (cd "$out" && /usr/bin/python3 "$files/$script" --datasets-dir "$root/data/torchvision" "$@") >"$out/log" 2>&1 ||
    { tail -n 20 "$out/log"; echo "popxl_mnist.sh: $script failed" >&2; exit 1; }
  local seconds accuracy
  seconds=$(sed -n "s/^Timer 'MNIST training' took \([0-9.]*\) seconds$/\1/p" "$out/log")
  accuracy=$(tr '\r' '\n' <"$out/log" | sed -n 's/^Accuracy on test set: *\([0-9.]*\)%$/\1/p')
  echo "$label $seconds $accuracy" >>"$out/rows"
}
run_popxl "mnist.py (R=1, batch 8)" mnist.py
run_popxl "mnist_rts.py --replication-factor 1 --batch-size 8" mnist_rts.py --replication-factor 1 --batch-size 8 --test
run_popxl "mnist_rts.py --replication-factor 2 --batch-size 4 --rts" mnist_rts.py --replication-factor 2 \
  --batch-size 4 --rts --test
/usr/bin/python3 "$root/bench/pytorch_mlp.py" --mode train --batch-size 8 --loader torchvision \
  --torchvision-dir "$root/data/torchvision" 2>/dev/null >"$out/torch.json"
/usr/bin/python3 "$root/bench/pytorch_mlp.py" --mode train --batch-size 8 2>/dev/null >"$out/torch_tensors.json"
python3 - "$out/rows" "$out/torch.json" "$out/torch_tensors.json" <<'PY'
import json, sys
torch, tensors = (json.load(open(f)) for f in sys.argv[2:4])
torch_rate = torch["train_samples_per_second"]
for line in open(sys.argv[1]):
    label, seconds, accuracy = line.rsplit(" ", 2)
    rate = 60000 / float(seconds)
    print(f"{label:<58} {float(seconds):10.2f} {rate:12.0f} {float(accuracy):8.2f}% {rate / torch_rate:7.1f}x")
for label, t in (("torchvision loader, as the scripts", torch), ("data preloaded as tensors", tensors)):
    rate = t["train_samples_per_second"]
    print(f"{'pytorch_mlp.py (torch ' + t['torch_version'] + ', batch 8, ' + label + ')':<58} {60000 / rate:10.2f} "
          f"{rate:12.0f} {100 * t['test_accuracy']:8.2f}% {rate / torch_rate:7.1f}x")
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
