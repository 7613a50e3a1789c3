#!/usr/bin/env bash
# PopTorch's pipelining tutorial (Graphcore's examples repository,
# tutorials/tutorials/pytorch/pipelining/mnist_pipeline.py) run unmodified on Plexus through
# `import poptorch` with its defaults (3 epochs, 4 stages, AdamW), also --strategy sharded
# and --offload-optimiser, next to its PyTorch twin (bench/pytorch_seed003_cnn.py: the same
# model, recipe and batching), all in one run on this machine: each program's whole wall
# time (data loading, compilation, 3 epochs of training, test), its test accuracy, and the
# twin's time over it. Graphcore's script is not part of this repository: pass the directory
# that holds it. MNIST is linked where torchvision looks (~/.torch/datasets under a scratch HOME).
# Usage: bench/poptorch_mnist.sh TUTORIAL_DIR   (env: BUILD_DIR, default build-test)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
if [[ $# -ne 1 || ${1:-} == --help || ! -f ${1:-}/mnist_pipeline.py ]]; then
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
  [[ ${1:-} == --help ]] && exit 0
  echo "poptorch_mnist.sh: give the directory holding the tutorial's mnist_pipeline.py" >&2
  exit 2
fi
tutorial=$(cd "$1" && pwd)/mnist_pipeline.py
build_dir=${BUILD_DIR:-$root/build-test}
bash "$root/scripts/fetch-data.sh" >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mkdir -p "$out/home/.torch/datasets/MNIST"
ln -s "$root/data/torchvision/MNIST/raw" "$out/home/.torch/datasets/MNIST/raw"
export PYTHONPATH=$build_dir/python PLEXUS_PLUGIN_PATH=$build_dir/lib

echo "machine: $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
run_tutorial() {  # run_tutorial <args...>: one row "<label>|<seconds>|<accuracy>"
  local start end accuracy
  start=$(date +%s.%N)
  (cd "$out" && HOME="$out/home" /usr/bin/python3 "$tutorial" "$@") >"$out/log" 2>&1 ||
    { tail -n 20 "$out/log"; echo "poptorch_mnist.sh: mnist_pipeline.py $* failed" >&2; exit 1; }
  end=$(date +%s.%N)
  accuracy=$(tr '\r' '\n' <"$out/log" | sed -n 's/^Accuracy on test set: *\([0-9.]*\)%$/\1/p')
  echo "mnist_pipeline.py ${*:-(defaults: pipelined)}|$(echo "$end - $start" | bc)|$accuracy" >>"$out/rows"
}
run_tutorial
run_tutorial --strategy sharded
run_tutorial --offload-optimiser
start=$(date +%s.%N)
/usr/bin/python3 "$root/bench/pytorch_seed003_cnn.py" --epochs 3 --json 2>/dev/null >"$out/torch.json"
end=$(date +%s.%N)
python3 - "$out/rows" "$out/torch.json" "$(echo "$end - $start" | bc)" <<'PY'
import json, sys
torch = json.load(open(sys.argv[2]))
torch_seconds = float(sys.argv[3])
print(f"{'program':<50} {'wall_s':>8} {'test_acc':>9} {'vs_torch':>9}")
for line in open(sys.argv[1]):
    label, seconds, accuracy = line.strip().split("|")
    print(f"{label:<50} {float(seconds):8.1f} {float(accuracy):8.2f}% {torch_seconds / float(seconds):8.1f}x")
accuracy = 100 * torch.get("test_accuracy", float("nan"))
print(f"{'pytorch_seed003_cnn.py (torch ' + torch['torch'] + ')':<50} {torch_seconds:8.1f} "
      f"{accuracy:8.2f}% {1.0:8.1f}x")
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
