#!/usr/bin/env bash
# The test suite, from a fresh Debian 12 machine: installs what is missing, fetches real
# MNIST (integration tests train on it), builds, and runs ctest; then builds and runs the
# same tests under AddressSanitizer + UndefinedBehaviorSanitizer, and the threading tests
# (streaming layer, loader, sessions, pipelines, devices) under ThreadSanitizer.
# Environment: PLEXUS_SKIP_SANITIZE=1 skips the sanitizer pass; PLEXUS_JOBS sets -j.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${PLEXUS_JOBS:-$(nproc)}

bash "$root/scripts/install-deps.sh"
bash "$root/scripts/fetch-data.sh"

run_suite() {  # run_suite <build dir> <cmake args...>
  local build=$1
  shift
  echo "== test.sh: build $build ($*)"
  cmake -S "$root" -B "$build" -DPLEXUS_BUILD_BENCH=OFF "$@" >/dev/null
  cmake --build "$build" -j "$jobs"
  (cd "$build" && PLEXUS_DATA_DIR="$root/data" ctest --output-on-failure -j "$jobs" --timeout 600)
}

start=$(date +%s)
run_suite "$root/build-test" -DCMAKE_BUILD_TYPE=Release
if [[ ${PLEXUS_SKIP_SANITIZE:-0} != 1 ]]; then
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # Integration tests under sanitizers run every code path but train for fewer steps
  # (a full epoch of seed 003's CNN in a Debug ASan build takes most of the CI budget).
  export PLEXUS_SANITIZED=1
  run_suite "$root/build-asan" -DCMAKE_BUILD_TYPE=Debug -DPLEXUS_SANITIZE=ON
  echo "== test.sh: ThreadSanitizer build of the threading tests"
  tsan="$root/build-tsan"
  cmake -S "$root" -B "$tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPLEXUS_TSAN=ON -DPLEXUS_BUILD_SAMPLES=OFF \
    -DPLEXUS_BUILD_BENCH=OFF >/dev/null
  cmake --build "$tsan" -j "$jobs" --target tests_streams tests_runtime tests_data plexus-strategy-pipelined \
    plexus-strategy-sharded plexus-collectives-local plexus_mock_plugins
  (cd "$tsan" && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ctest --output-on-failure -j "$jobs" \
    --timeout 600 -R "BoundedQueue|StreamPump|SpinWait|StreamingSession|Loader|PipelinedSession|VirtualDevice|ReplicatedSession")
fi
echo "test.sh: all tests passed in $(( $(date +%s) - start )) s"
