// remote_load / remote_store bandwidth against memcpy, in the same run (issue: "remote_load
// / remote_store bandwidth against memcpy bandwidth"). Through the public C++ API: a
// session whose step is one remote_load (slot -> device tensor) or one remote_store
// (device variable -> slot) of B bytes, run with device_iterations 64 so the per-run
// hand-over is amortised; reported as bytes moved per second. BM_Memcpy copies the same
// bytes between two 64-byte-aligned buffers (the arenas and remote buffers are aligned).
#include <benchmark/benchmark.h>
#include <plexus/plexus.hpp>

#include "bench/memcpy_baseline.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace {

constexpr int64_t kIterations = 64;

using bench::aligned;
using bench::BM_Memcpy;

// load = true: slot -> tensor; false: variable -> slot.
void remote_copy(benchmark::State& state, bool load) {
  const int64_t elements = state.range(0) / 4;
  plx::Ir ir;
  const plx::RemoteBuffer buffer = ir.remote_buffer(PLX_DTYPE_FLOAT32, {elements}, 1);
  if (load) {
    ir.remote_load(buffer, 0);
  } else {
    ir.remote_store(buffer, 0, ir.variable<float>("v", {elements}, std::vector<float>(static_cast<size_t>(elements), 1.0f)));
  }
  plx::SessionOptions opts;
  opts.device_iterations = kIterations;
  plx::Session session(ir, opts);
  session.run({});
  for (auto _ : state) session.run({});
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kIterations * state.range(0));
}

void BM_RemoteLoad(benchmark::State& state) { remote_copy(state, true); }
void BM_RemoteStore(benchmark::State& state) { remote_copy(state, false); }

}  // namespace

BENCHMARK(BM_Memcpy)->RangeMultiplier(4)->Range(4 << 10, 64 << 20)->ArgName("bytes");
BENCHMARK(BM_RemoteLoad)->RangeMultiplier(4)->Range(4 << 10, 64 << 20)->ArgName("bytes")->UseRealTime();
BENCHMARK(BM_RemoteStore)->RangeMultiplier(4)->Range(4 << 10, 64 << 20)->ArgName("bytes")->UseRealTime();

BENCHMARK_MAIN();
