#!/usr/bin/env bash
# PopTorch's pipelining tutorial (Graphcore's examples repository,
# tutorials/tutorials/pytorch/pipelining/mnist_pipeline.py) run unmodified on Plexus through
# `import poptorch` with its defaults (3 epochs, 4 stages, AdamW), also --strategy sharded
# and --offload-optimiser, next to its PyTorch twin (bench/pytorch_mnist_pipeline.py: the
# same torchvision data pipeline, model, recipe and loop; with the tutorial's 16 loader
# workers and with one per core), all in one run on this machine: each program's whole wall
# time (data loading, compilation, 3 epochs, test), the seconds inside the model's calls
# (bench/model_call_seconds.py around the unmodified script), its test accuracy, and the
# twins' times over them. Graphcore's script is not part of this repository: pass the directory
# that holds it. MNIST is linked where torchvision looks (~/.torch/datasets under a scratch HOME).
# Usage: bench/poptorch_mnist.sh TUTORIAL_DIR   (env: BUILD_DIR, default build-test)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
if [[ $# -ne 1 || ${1:-} == --help || ! -f ${1:-}/mnist_pipeline.py ]]; then
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
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
run_tutorial() {  # run_tutorial <args...>: one row "<label>|<wall s>|<in-model s>|<accuracy>"
  local start end accuracy
  start=$(date +%s.%N)
  (cd "$out" && HOME="$out/home" /usr/bin/python3 "$root/bench/model_call_seconds.py" "$out/in_model" "$tutorial" "$@") \
    >"$out/log" 2>&1 || { tail -n 20 "$out/log"; echo "poptorch_mnist.sh: mnist_pipeline.py $* failed" >&2; exit 1; }
  end=$(date +%s.%N)
  accuracy=$(tr '\r' '\n' <"$out/log" | sed -n 's/^Accuracy on test set: *\([0-9.]*\)%$/\1/p')
  echo "mnist_pipeline.py ${*:-(defaults: pipelined)}|$(echo "$end - $start" | bc)|$(cat "$out/in_model")|$accuracy" \
    >>"$out/rows"
}
run_twin() {  # run_twin <workers>: the twin's JSON line, its wall time added
  local start end
  start=$(date +%s.%N)
  /usr/bin/python3 "$root/bench/pytorch_mnist_pipeline.py" --data-root "$out/home/.torch/datasets" --num-workers "$1" \
    --json 2>/dev/null | tail -n 1 >"$out/twin"
  end=$(date +%s.%N)
  python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); j["wall"] = float(sys.argv[2]); j["workers"] = int(sys.argv[3]); print(json.dumps(j))' \
    "$out/twin" "$(echo "$end - $start" | bc)" "$1" >>"$out/twins"
}
run_tutorial
run_tutorial --strategy sharded
run_tutorial --offload-optimiser
run_twin 16
run_twin "$(nproc)"
python3 - "$out/rows" "$out/twins" <<'PY'
import json, sys
twins = [json.loads(line) for line in open(sys.argv[2])]
ref = twins[0]  # the tutorial's 16 workers, as the tutorial asks
print(f"{'program':<52} {'wall_s':>7} {'vs_torch':>8} {'vs_fast':>8} {'model_s':>8} {'vs_torch':>8} {'test_acc':>8}")
fast = min(t["wall"] for t in twins)
rows = [line.strip().split("|") for line in open(sys.argv[1])]
for label, seconds, in_model, accuracy in rows:
    seconds, in_model = float(seconds), float(in_model)
    print(f"{label:<52} {seconds:7.1f} {ref['wall'] / seconds:7.1f}x {fast / seconds:7.1f}x {in_model:8.1f} "
          f"{ref['train_model_seconds'] / in_model:7.1f}x {float(accuracy):7.2f}%")
for t in twins:
    label = f"pytorch_mnist_pipeline.py --num-workers {t['workers']}"
    print(f"{label:<52} {t['wall']:7.1f} {ref['wall'] / t['wall']:7.1f}x {fast / t['wall']:7.1f}x "
          f"{t['train_model_seconds']:8.1f} {ref['train_model_seconds'] / t['train_model_seconds']:7.1f}x "
          f"{100 * t['test_accuracy']:7.2f}%")
PY
echo "wall_s: the whole program, data loading and test included; vs_torch: the twin as the tutorial writes it"
echo "(16 loader workers; poptorch.DataLoader starts at most one per core) over it; vs_fast: the faster twin"
echo "(16 or $(nproc) workers) over it; model_s: seconds inside the model's calls (Plexus: PoplarExecutor.__call__,"
echo "compilation included; PyTorch: forward, backward and steps)."
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
