#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine: installs what is missing, fetches real
# MNIST, builds Release, and trains + tests seed 000's sample on it: mnist_rts with two
# replicas and replicated tensor sharding (W0 and W1 sharded across the replicas), batch 4
# per replica as in the seed's command line (the global batch of 8 of the single-replica
# run, which it trains like). Then installs Plexus under the build folder (<build>/install)
# and the Python package against it into a venv there (<build>/python-venv, which sees
# Debian's numpy and cffi), runs the README's Python program with it, and says how to use it.
# Extra arguments go to the sample (e.g. scripts/demo.sh --learning-rate 0.05).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${PLEXUS_BUILD_DIR:-$root/build-release}
jobs=${PLEXUS_JOBS:-$(nproc)}

bash "$root/scripts/install-deps.sh"
bash "$root/scripts/fetch-data.sh"
# A new build folder gets Release without tests and benchmarks; an existing one (CI passes
# its Release test build through PLEXUS_BUILD_DIR) keeps its options.
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DPLEXUS_BUILD_TESTS=OFF -DPLEXUS_BUILD_BENCH=OFF >/dev/null
fi
# The default target: mnist_rts and everything `cmake --install` below installs (the
# library, every configured plugin, the tools). A list of targets here once left out the
# Gloo plugin, and the install step failed after training.
cmake --build "$build" -j "$jobs"

mkdir -p "$root/out"
"$build/samples/mnist_rts/mnist_rts" --replication-factor 2 --batch-size 4 --rts --data-dir "$root/data" \
  --metrics-out "$root/out/mnist_rts_metrics.json" "$@"
echo "demo: metrics written to out/mnist_rts_metrics.json"

# The Python package (README "From Python"): pip builds the cffi extension against the
# install, offline (--no-index; numpy and cffi are Debian's, seen through
# --system-site-packages), and as root too (the venv is not the system's Python).
prefix=$build/install
venv=$build/python-venv
cmake --install "$build" --prefix "$prefix" >/dev/null
/usr/bin/python3 -m venv --system-site-packages "$venv"
PLEXUS_PREFIX=$prefix "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
  --no-build-isolation --no-index --no-deps --force-reinstall "$root/bindings/python"
echo "demo: docs/python/quickstart.py (the README's Python program) with the installed package:"
env -u PYTHONPATH -u PLEXUS_PLUGIN_PATH "$venv/bin/python" "$root/docs/python/quickstart.py"
cat <<EOT
demo: Plexus is installed in $prefix, the Python package in $venv. Use it with
  $venv/bin/python your_program.py      # or: source $venv/bin/activate
  (import plexus; README "From Python", docs/python.md)
and the pictures of a --profile run's memory report and trace with
  $venv/bin/plexus-report --memory profile/training.memory.json --trace profile/training.json --out report
  (docs/profiling.md, "Pictures")
EOT
