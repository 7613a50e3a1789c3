#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine: installs what is missing, fetches real
# MNIST, builds Release, and trains + tests seed 000's sample on it: mnist_rts with two
# replicas and replicated tensor sharding (W0 and W1 sharded across the replicas), batch 4
# per replica as in the seed's command line (the global batch of 8 of the single-replica
# run, which it trains like).
# Extra arguments go to the sample (e.g. scripts/demo.sh --learning-rate 0.05).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${PLEXUS_BUILD_DIR:-$root/build-release}
jobs=${PLEXUS_JOBS:-$(nproc)}

bash "$root/scripts/install-deps.sh"
bash "$root/scripts/fetch-data.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DPLEXUS_BUILD_TESTS=OFF -DPLEXUS_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target mnist_rts plexus-collectives-local

mkdir -p "$root/out"
"$build/samples/mnist_rts/mnist_rts" --replication-factor 2 --batch-size 4 --rts --data-dir "$root/data" \
  --metrics-out "$root/out/mnist_rts_metrics.json" "$@"
echo "demo: metrics written to out/mnist_rts_metrics.json"
