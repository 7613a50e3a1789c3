#!/usr/bin/env bash
# The test suite, from a fresh Debian 12 machine: installs what is missing, fetches real
# MNIST (integration tests train on it), builds, and runs ctest; then builds and runs the
# same tests under AddressSanitizer + UndefinedBehaviorSanitizer, and the threading tests
# (streaming layer, loader, sessions, pipelines, devices) under ThreadSanitizer; last, when
# clang++ is there, runs the libFuzzer targets (tests/*/fuzz: the checkpoint reader, the IDX
# reader, the C API's decoding of session options and op attributes).
# Environment: PLEXUS_SKIP_SANITIZE=1 skips the sanitizer pass; PLEXUS_JOBS sets -j;
# PLEXUS_FUZZ_SECONDS sets each fuzzer's time (default 60, 0 skips them).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${PLEXUS_JOBS:-$(nproc)}

# Each phase's wall time, printed as it ends and again in a table at the end (CI's budget).
start=$(date +%s)
phase_start=$start
phases=()
phase_done() {  # phase_done <name>: the phase that began at $phase_start has ended
  local now
  now=$(date +%s)
  phases+=("$(printf '%-44s %5d s' "$1" $((now - phase_start)))")
  echo "== test.sh: $1 took $((now - phase_start)) s"
  phase_start=$now
}

bash "$root/scripts/install-deps.sh"
bash "$root/scripts/fetch-data.sh"
phase_done "dependencies and data"

run_suite() {  # run_suite <phase name> <build dir> <cmake args...>
  local name=$1 build=$2
  shift 2
  echo "== test.sh: build $build ($*)"
  cmake -S "$root" -B "$build" -DPLEXUS_BUILD_BENCH=OFF "$@" >/dev/null
  cmake --build "$build" -j "$jobs"
  phase_done "$name: build"
  (cd "$build" && PLEXUS_DATA_DIR="$root/data" ctest --output-on-failure -j "$jobs" --timeout 600)
  phase_done "$name: ctest"
}

run_suite Release "$root/build-test" -DCMAKE_BUILD_TYPE=Release
if [[ ${PLEXUS_SKIP_SANITIZE:-0} != 1 ]]; then
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # The sanitizer pass runs the unit, C API, plugin, Python, install and MPI suites; the
  # samples' integration runs on real data (the longest tests: 23 of the 79 minutes of a
  # cold CI run were this pass's build and ctest) run in the Release pass above, so the
  # ASan build leaves the samples out (-DPLEXUS_BUILD_SAMPLES=OFF drops their tests too).
  # Tests that still train under sanitizers do fewer steps (PLEXUS_SANITIZED).
  export PLEXUS_SANITIZED=1
  run_suite "ASan + UBSan" "$root/build-asan" -DCMAKE_BUILD_TYPE=Debug -DPLEXUS_SANITIZE=ON -DPLEXUS_BUILD_SAMPLES=OFF
  echo "== test.sh: ThreadSanitizer build of the threading tests"
  tsan="$root/build-tsan"
  cmake -S "$root" -B "$tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPLEXUS_TSAN=ON -DPLEXUS_BUILD_SAMPLES=OFF \
    -DPLEXUS_BUILD_BENCH=OFF >/dev/null
  cmake --build "$tsan" -j "$jobs" --target tests_streams tests_runtime tests_session tests_data tests_gemm_parts \
    plexus-strategy-pipelined plexus-strategy-sharded plexus-collectives-local plexus_mock_plugins
  (cd "$tsan" && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ctest --output-on-failure -j "$jobs" \
    --timeout 600 -R "RunParts|BoundedQueue|StreamPump|SpinWait|StreamingSession|Loader|PipelinedSession|VirtualDevice|ReplicatedSession|HostUpdate|RunQueue|RunHandle|DeviceProgram|VariableAccess|ReplicaStorage")
  phase_done "TSan build + threading tests"
fi

# The libFuzzer targets (tests/*/fuzz, built apart with clang: tests/fuzz.cmake) under ASan +
# UBSan, each from a seed corpus its own program makes at run time, for $fuzz_seconds each.
# A crash, a sanitizer report, a leak or a failed check of the target fails test.sh; the
# input that did it is kept in build-fuzz/<fuzzer>/ (crash-*, oom-*, leak-*, ...) and
# reproduces with `build-fuzz/<fuzzer>/<fuzzer> <file>`.
fuzzers=(  # <source folder> <fuzzer> <seed corpus program> <dictionary in the folder>
  "tests/checkpoint/fuzz checkpoint_reader_fuzzer checkpoint_seed_corpus manifest.dict"
  "tests/data/fuzz idx_reader_fuzzer idx_seed_corpus idx.dict"
  "tests/abi/fuzz c_api_decode_fuzzer c_api_decode_seed_corpus c_api_decode.dict"
  "tests/abi/sequence_fuzz c_api_sequence_fuzzer c_api_sequence_seed_corpus c_api_sequence.dict"
)
run_fuzzer() {  # run_fuzzer <source folder> <fuzzer> <seed corpus program> <dictionary>
  local src="$root/$1" fuzzer=$2 seeds=$3 dict="$root/$1/$4"
  local build="$root/build-fuzz/$fuzzer" corpus status=0
  echo "== test.sh: $fuzzer, $fuzz_seconds s"
  cmake -S "$src" -B "$build" -DCMAKE_CXX_COMPILER=clang++ >/dev/null
  cmake --build "$build" -j "$jobs"
  phase_done "$fuzzer: build"
  corpus=$(mktemp -d)
  "$build/$seeds" "$corpus"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "$build/$fuzzer" \
    -max_total_time="$fuzz_seconds" -dict="$dict" -artifact_prefix="$build/" -print_final_stats=1 "$corpus" \
    >"$build/last-run.log" 2>&1 || status=$?
  rm -rf "$corpus"
  if [[ $status -ne 0 ]]; then
    tail -n 80 "$build/last-run.log"
    echo "test.sh: $fuzzer failed (exit $status; log $build/last-run.log)" >&2
    exit 1
  fi
  grep -E "^(Done |stat::number_of_executed_units)" "$build/last-run.log" || true
  phase_done "$fuzzer: run"
}
fuzz_seconds=${PLEXUS_FUZZ_SECONDS:-60}
if ! command -v clang++ >/dev/null 2>&1; then
  echo "== test.sh: clang++ not found: the fuzzers were skipped"
elif [[ $fuzz_seconds -gt 0 ]]; then
  for f in "${fuzzers[@]}"; do
    # shellcheck disable=SC2086  # each entry is four words
    run_fuzzer $f
  done
fi
echo "== test.sh: wall time per phase"
printf '   %s\n' "${phases[@]}"
echo "test.sh: all tests passed in $(( $(date +%s) - start )) s"
