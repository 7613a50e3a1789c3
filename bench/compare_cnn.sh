#!/usr/bin/env bash
# Plexus vs PyTorch on the seeds' two CNNs, whole programs on real MNIST, in one run:
#  seed 003 (PopTorch "Pipelining" tutorial): samples/mnist_pipeline as a user runs it (its
#    defaults: 4 stages pipelined 1F1B over devices 0..3, batch 40, gradient accumulation 10,
#    device iterations 10, AdamW lr 1e-3, seed 0) but EPOCHS epochs; the same recipe with
#    --strategy sharded (one stage computes at a time); and the same CNN on ONE device,
#    samples/stream_demo (all four blocks on device 0; it has no gradient accumulation, so
#    an AdamW update every micro-batch of 40, and no test pass). Against
#    bench/pytorch_seed003_cnn.py (the same model and recipe; --gradient-accumulation 1
#    for stream_demo's).
#  seed 002 (IPU TensorFlow "Distributed training"): samples/distributed_training with one
#    worker (batch 64, Adam, STEPS steps), as bench/distributed_training.sh runs it but with
#    the test pass, against bench/pytorch_seed002_cnn.py --batch-size 64 (both seed 42).
# PyTorch (Debian's python3-torch, /usr/bin/python3) runs at TORCH_THREADS threads
# (torch.set_num_threads and BLIS_NUM_THREADS) twice: as installed, and with BLIS_ARCH_TYPE
# forced (Debian's torch does its GEMMs in Debian's BLIS, which picks `generic` on this VM's
# CPU; see compare_mlp.sh and docs/design.md, "Platform facts"); the faster one is compared.
# Every configuration runs REPEATS times, interleaved (Plexus, PyTorch, PyTorch forced, then
# again) so that a change of load hits all sides. samples/s = training samples / wall time
# of the training loop (batch preparation included, compilation and data loading not), as
# each program reports it. Prints every command it runs, the load average before, between
# and after, then a table: samples/s best and median, test accuracy (mean over the repeats),
# and the ratio Plexus / faster PyTorch.
# ACCURACY=1 adds seed 003's accuracy: the sample's defaults (3 epochs) per seed in
# ACC_SEEDS (default 0 1 2) next to the twin (forced kernel set), test accuracies and their
# means; ACCURACY=only runs just that part (slow: ~1 min per seed and side on 2 cores).
#
# Usage: bench/compare_cnn.sh [-h|--help]
# Environment (all optional):
#   BUILD_DIR      build folder, configured Release if new (default: <repo>/build-bench)
#   JOBS           parallel build jobs (default: 1)
#   DATA_DIR       folder holding mnist/ (default: <repo>/data; fetched when missing)
#   OUT_DIR        raw JSON results and logs (default: $BUILD_DIR/bench-results/compare_cnn)
#   PYTHON         Debian's interpreter with python3-torch (default: /usr/bin/python3)
#   REPEATS        runs of every configuration; best and median are compared (default: 3)
#   EPOCHS         seed 003 training epochs per throughput run (default: 1; the sample's is 3)
#   STEPS          seed 002 training steps per run (default: 2000, the sample's)
#   TORCH_THREADS  torch.set_num_threads and BLIS_NUM_THREADS for PyTorch (default: 2)
#   BLIS_ARCH      BLIS_ARCH_TYPE id of PyTorch's forced variant (default: BLIS's own pick as
#                  Plexus reports it, or 6 = zen3 when that is `generic`)
#   MODELS         which CNNs: "003 002" (default), "003" or "002"
#   ACCURACY       0 (default), 1 (also seed 003's 3-epoch accuracy per seed), only
#   ACC_SEEDS      seeds of the accuracy part (default: "0 1 2")
#   ACC_EPOCHS     epochs of the accuracy part (default: 3, the sample's)
#   REPORT_ONLY=1  only print the table again from the JSON files in OUT_DIR (e.g. of an
#                  interrupted run)
set -euo pipefail

if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi
if [[ $# -gt 0 ]]; then
  echo "compare_cnn: no arguments expected (see --help); got: $*" >&2
  exit 2
fi

root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build-bench}
jobs=${JOBS:-1}
data_dir=${DATA_DIR:-$root/data}
out_dir=${OUT_DIR:-$build_dir/bench-results/compare_cnn}
python=${PYTHON:-/usr/bin/python3}
repeats=${REPEATS:-3}
epochs=${EPOCHS:-1}
steps=${STEPS:-2000}
torch_threads=${TORCH_THREADS:-2}
models=${MODELS:-003 002}
accuracy=${ACCURACY:-0}
acc_seeds=${ACC_SEEDS:-0 1 2}
acc_epochs=${ACC_EPOCHS:-3}

# Prints a command (with any VAR=value prefix) to the script's stderr (fd 3, so that it
# shows even when the command's own stderr goes to a log) and runs it.
exec 3>&2
run() {
  echo "+ $*" >&3
  env "$@"
}
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# --- report (also written to $out_dir/summary.json) ---------------------------------
report() {
  echo
  "$python" - "$out_dir" "$repeats" "$epochs" "$steps" "$arch_id" "$acc_epochs" <<'PY'
import glob
import json
import os
import statistics
import sys

out, repeats, epochs, steps, arch, acc_epochs = sys.argv[1:7]


def load(path):  # None for a run that did not finish (an empty or cut file)
    try:
        return json.load(open(path))
    except ValueError:
        return None


def runs(name):
    found = (load(f) for f in sorted(glob.glob(os.path.join(out, f"{name}_[0-9]*.json"))))
    return [m for m in found if m is not None]


def rate(m):
    if "totals" in m:  # stream_demo: batches of 40 over the training loop's wall time
        return m["totals"]["batches"] * m["options"]["batch_size"] / m["totals"]["wall_seconds"]
    return m["train_samples_per_second"]


def figures(name):
    ms = runs(name)
    if not ms:
        return None
    rates = [rate(m) for m in ms]
    accs = [m.get("test_accuracy") for m in ms if m.get("test_accuracy") is not None]
    return {"best": max(rates), "median": statistics.median(rates), "n": len(rates),
            "acc": statistics.mean(accs) if accs else None,
            "acc_range": (min(accs), max(accs)) if accs else None}


def acc_text(f):
    if f["acc"] is None:
        return "-"
    lo, hi = f["acc_range"]
    return f"{100 * f['acc']:.2f}%" + ("" if hi - lo < 5e-5 else f" ({100 * lo:.2f}-{100 * hi:.2f})")


# epochs and steps as the runs found had them (REPORT_ONLY may read an older run's files)
epochs = (runs("torch003") or runs("torch003_ga1") or [{"epochs": epochs}])[0]["epochs"]
steps = (runs("torch002") or [{"steps": steps}])[0]["steps"]
groups = [
    (f"seed 003 CNN, {epochs} epoch(s), batch 40 x accumulation 10",
     [("mnist_pipeline (defaults: pipelined 1F1B, 4 devices)", "plexus003_pipelined"),
      ("mnist_pipeline --strategy sharded", "plexus003_sharded")], "torch003"),
    (f"seed 003 CNN on one device, {epochs} epoch(s), batch 40, an update per batch",
     [("stream_demo (1 device; no test pass)", "plexus003_onedevice")], "torch003_ga1"),
    (f"seed 002 CNN, {steps} steps of batch 64 (1 worker)",
     [("distributed_training (1 worker x 1 replica)", "plexus002")], "torch002"),
]
rows, summary = [], {}
for title, plexus, twin in groups:
    t, tf = figures(twin), figures(twin + "_forced")
    if t is None or tf is None:
        continue
    faster = max((t, "as installed"), (tf, f"BLIS_ARCH_TYPE={arch}"), key=lambda x: x[0]["median"])
    rows.append((title, None, None, None))
    for label, name in plexus:
        f = figures(name)
        if f:
            rb = f["best"] / faster[0]["best"] if faster[0]["best"] else float("nan")
            rm = f["median"] / faster[0]["median"] if faster[0]["median"] else float("nan")
            rows.append((f"  Plexus {label}", f, rb, rm))
            summary[name] = f
    rows.append(("  PyTorch as installed", t, None, None))
    rows.append((f"  PyTorch BLIS_ARCH_TYPE={arch}", tf, None, None))
    summary[twin], summary[twin + "_forced"] = t, tf
    summary[twin + "_faster"] = faster[1]
if rows:
    repeats = max(f["n"] for _, f, _, _ in rows if f)
    print(f"samples/s: best and median of {repeats} runs; test accuracy: mean over the runs; "
          "ratio = Plexus / the faster PyTorch variant (by median), best / median")
    print(f"{'':60} {'best':>8} {'median':>8} {'test acc':>20} {'ratio':>13}")
    for label, f, rb, rm in rows:
        if f is None:
            print(label)
            continue
        ratio = f"{rb:5.2f}x/{rm:5.2f}x" if rb is not None else ""
        print(f"{label:60} {f['best']:8.0f} {f['median']:8.0f} {acc_text(f):>20} {ratio:>13}")

acc = {}
for side in ("plexus003", "torch003"):
    for f in sorted(glob.glob(os.path.join(out, f"acc_{side}_*.json"))):
        m = load(f)
        if m is not None:
            acc.setdefault(side, {})[int(f.rsplit("_", 1)[1][:-5])] = (m["test_accuracy"],
                                                                      m["train_samples_per_second"])
if acc:
    print()
    print(f"seed 003 test accuracy, the sample's defaults ({acc_epochs} epochs), per seed "
          f"(PyTorch with BLIS_ARCH_TYPE={arch}), training samples/s in brackets:")
    for side, label in (("plexus003", "Plexus mnist_pipeline"), ("torch003", "PyTorch twin")):
        by_seed = acc.get(side, {})
        if by_seed:
            each = ", ".join(f"seed {s}: {100 * v:.2f}% ({r:.0f}/s)" for s, (v, r) in sorted(by_seed.items()))
            mean = statistics.mean(v for v, _ in by_seed.values())
            print(f"  {label:22} {each}; mean {100 * mean:.2f}%")
    summary["accuracy"] = acc
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
PY
  echo "load average at the end: $(loadavg)"
  echo "raw results: $out_dir (summary.json)"
}

if [[ ${REPORT_ONLY:-0} == 1 ]]; then  # the table again from the JSON files of the last run
  arch_id=$(cat "$out_dir/blis_arch_type")
  report
  exit 0
fi

# --- dependencies, data, build -------------------------------------------------------
if ! "$python" -c 'import torch, numpy' 2>/dev/null; then
  run "$root/scripts/install-deps.sh" --bench
fi
if [[ ! -e $data_dir/mnist/train-images-idx3-ubyte && ! -e $data_dir/mnist/train-images-idx3-ubyte.gz ]]; then
  run PLEXUS_DATA_DIR="$data_dir" bash "$root/scripts/fetch-data.sh"
fi
if [[ ! -f $build_dir/CMakeCache.txt ]]; then
  run cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DPLEXUS_BUILD_TESTS=OFF
fi
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
if [[ $build_type != Release ]]; then
  echo "compare_cnn: warning: $build_dir is a '$build_type' build, not Release; figures may be off" >&2
fi
run cmake --build "$build_dir" -j "$jobs" --target mnist_pipeline stream_demo distributed_training \
  plexus-strategy-pipelined plexus-strategy-sharded plexus-collectives-local
pipeline_bin=$build_dir/samples/mnist_pipeline/mnist_pipeline
stream_bin=$build_dir/samples/stream_demo/stream_demo
dist_bin=$build_dir/samples/distributed_training/distributed_training
twin003=$root/bench/pytorch_seed003_cnn.py
twin002=$root/bench/pytorch_seed002_cnn.py
mkdir -p "$out_dir"
rm -f "$out_dir"/*.json "$out_dir/blis_arch_type"

# --- machine and PyTorch's forced kernel set ----------------------------------------
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "machine: $cpu, $(nproc) cores; load average at start: $(loadavg)"
echo "pytorch: $("$python" -c 'import torch; print(torch.__version__)') ($python), $torch_threads threads"
# BLIS 0.9 x86-64 arch_t ids (blis.h: enum arch_t).
declare -A blis_id=([skx]=0 [knl]=1 [knc]=2 [haswell]=3 [sandybridge]=4 [penryn]=5 [zen3]=6 [zen2]=7 [zen]=8
                    [excavator]=9 [steamroller]=10 [piledriver]=11 [bulldozer]=12 [generic]=25)
run "$dist_bin" --data-dir "$data_dir" --num-steps 10 --skip-test >"$out_dir/probe.log" 2>&1
probe=$(sed -n 's/^plexus: //p' "$out_dir/probe.log" | head -1)
echo "plexus: $probe"
blis_pick=$(sed -n 's/.*BLIS would pick \([a-z0-9]*\).*/\1/p' <<<"$probe")
if [[ -n ${BLIS_ARCH:-} ]]; then
  arch_id=$BLIS_ARCH
  why="BLIS_ARCH from the environment"
elif [[ -n $blis_pick && $blis_pick != generic && -n ${blis_id[$blis_pick]:-} ]]; then
  arch_id=${blis_id[$blis_pick]}
  why="BLIS's own pick ($blis_pick) as Plexus reports it"
else
  arch_id=6
  why="zen3: BLIS would pick '${blis_pick:-?}'; zen3 is one of the kernel sets Plexus measures"
fi
echo "PyTorch forced variant: BLIS_ARCH_TYPE=$arch_id ($why)"
echo "$arch_id" >"$out_dir/blis_arch_type"
echo

torch_env=(BLIS_NUM_THREADS="$torch_threads")
# twin NAME ARGS...: the PyTorch twin as installed and forced, JSON to $out_dir/NAME{,_forced}_$i.json
twin() {
  local name=$1
  shift
  run "${torch_env[@]}" "$python" "$@" --threads "$torch_threads" --data-dir "$data_dir" --json \
    >"$out_dir/${name}_$i.json"
  run "${torch_env[@]}" BLIS_ARCH_TYPE="$arch_id" "$python" "$@" --threads "$torch_threads" --data-dir "$data_dir" \
    --json >"$out_dir/${name}_forced_$i.json"
}

# --- throughput and accuracy, REPEATS interleaved runs ------------------------------
if [[ $accuracy != only ]]; then
  for ((i = 0; i < repeats; ++i)); do
    echo "--- repeat $((i + 1))/$repeats, load average $(loadavg)" >&2
    if [[ " $models " == *" 003 "* ]]; then
      run "$pipeline_bin" --data-dir "$data_dir" --epochs "$epochs" \
        --metrics-out "$out_dir/plexus003_pipelined_$i.json" >"$out_dir/plexus003_pipelined_$i.log" 2>&1
      run "$pipeline_bin" --data-dir "$data_dir" --epochs "$epochs" --strategy sharded \
        --metrics-out "$out_dir/plexus003_sharded_$i.json" >"$out_dir/plexus003_sharded_$i.log" 2>&1
      twin torch003 "$twin003" --epochs "$epochs"
      run "$stream_bin" --data-dir "$data_dir" --epochs "$epochs" --metrics-out "$out_dir/plexus003_onedevice_$i.json" \
        >"$out_dir/plexus003_onedevice_$i.log" 2>&1
      twin torch003_ga1 "$twin003" --epochs "$epochs" --gradient-accumulation 1 --skip-test
    fi
    if [[ " $models " == *" 002 "* ]]; then
      run "$dist_bin" --data-dir "$data_dir" --num-steps "$steps" --metrics-out "$out_dir/plexus002_$i.json" \
        >"$out_dir/plexus002_$i.log" 2>&1
      twin torch002 "$twin002" --batch-size 64 --steps "$steps" --seed 42  # the sample's default seed
    fi
  done
  echo "load average after the throughput runs: $(loadavg)"
fi

# --- seed 003's accuracy per seed (the sample's defaults) ---------------------------
if [[ $accuracy == 1 || $accuracy == only ]]; then
  for s in $acc_seeds; do
    run "$pipeline_bin" --data-dir "$data_dir" --epochs "$acc_epochs" --seed "$s" \
      --metrics-out "$out_dir/acc_plexus003_$s.json" >"$out_dir/acc_plexus003_$s.log" 2>&1
    run "${torch_env[@]}" BLIS_ARCH_TYPE="$arch_id" "$python" "$twin003" --epochs "$acc_epochs" --seed "$s" \
      --threads "$torch_threads" --data-dir "$data_dir" --json >"$out_dir/acc_torch003_$s.json"
  done
  echo "load average after the accuracy runs: $(loadavg)"
fi

report
