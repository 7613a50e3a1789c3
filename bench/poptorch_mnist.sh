#!/usr/bin/env bash
# PopTorch's pipelining tutorial (Graphcore's examples repository,
# tutorials/tutorials/pytorch/pipelining/mnist_pipeline.py) run unmodified on Plexus through
# `import poptorch` with its defaults (3 epochs, 4 stages, AdamW), also --strategy sharded
# and --offload-optimiser, next to its PyTorch twin (bench/pytorch_mnist_pipeline.py: the
# same torchvision data pipeline, model, recipe and loop), all in one run on this machine:
# each program's whole wall time (data loading, compilation, 3 epochs, test), the seconds
# inside the model's calls (cProfile of the unmodified script), its test accuracy, and
# the twin's times over them. Graphcore's script is not part of this repository: pass the directory
# that holds it. MNIST is linked where torchvision looks (~/.torch/datasets under a scratch HOME).
# Usage: bench/poptorch_mnist.sh TUTORIAL_DIR   (env: BUILD_DIR, default build-test)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
if [[ $# -ne 1 || ${1:-} == --help || ! -f ${1:-}/mnist_pipeline.py ]]; then
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
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
in_model() {  # in_model <cProfile output>: seconds inside the model's calls (PoplarExecutor.__call__)
  /usr/bin/python3 -c 'import pstats, sys
stats = pstats.Stats(sys.argv[1]).stats
print(sum(v[3] for k, v in stats.items() if k[0].endswith("poptorch/executor.py") and k[2] == "__call__"))' "$1"
}
run_tutorial() {  # run_tutorial <args...>: one row "<label>|<wall s>|<in-model s>|<accuracy>"
  local start end accuracy
  start=$(date +%s.%N)
  (cd "$out" && HOME="$out/home" /usr/bin/python3 -m cProfile -o "$out/prof" "$tutorial" "$@") >"$out/log" 2>&1 ||
    { tail -n 20 "$out/log"; echo "poptorch_mnist.sh: mnist_pipeline.py $* failed" >&2; exit 1; }
  end=$(date +%s.%N)
  accuracy=$(tr '\r' '\n' <"$out/log" | sed -n 's/^Accuracy on test set: *\([0-9.]*\)%$/\1/p')
  echo "mnist_pipeline.py ${*:-(defaults: pipelined)}|$(echo "$end - $start" | bc)|$(in_model "$out/prof")|$accuracy" \
    >>"$out/rows"
}
run_tutorial
run_tutorial --strategy sharded
run_tutorial --offload-optimiser
start=$(date +%s.%N)
/usr/bin/python3 "$root/bench/pytorch_mnist_pipeline.py" --data-root "$out/home/.torch/datasets" --json 2>/dev/null |
  tail -n 1 >"$out/torch.json"
end=$(date +%s.%N)
python3 - "$out/rows" "$out/torch.json" "$(echo "$end - $start" | bc)" <<'PY'
import json, sys
torch = json.load(open(sys.argv[2]))
wall, model = float(sys.argv[3]), torch["train_model_seconds"]
print(f"{'program':<46} {'wall_s':>7} {'vs_torch':>8} {'model_s':>8} {'vs_torch':>8} {'test_acc':>8}")
for line in open(sys.argv[1]):
    label, seconds, in_model, accuracy = line.strip().split("|")
    seconds, in_model = float(seconds), float(in_model)
    print(f"{label:<46} {seconds:7.1f} {wall / seconds:7.1f}x {in_model:8.1f} {model / in_model:7.1f}x "
          f"{float(accuracy):7.2f}%")
print(f"{'pytorch_mnist_pipeline.py (torch ' + torch['torch'] + ')':<46} {wall:7.1f} {1.0:7.1f}x {model:8.1f} "
      f"{1.0:7.1f}x {100 * torch['test_accuracy']:7.2f}%")
PY
echo "model_s: seconds inside the model's calls (Plexus: PoplarExecutor.__call__, compilation included;"
echo "PyTorch: forward, backward and steps); wall_s: the whole program, data loading and test included."
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
