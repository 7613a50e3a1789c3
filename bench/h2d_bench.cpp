// Host-to-device stream throughput against memcpy, in the same run. Through the public C++
// API: a session whose step is one host-to-device stream of B bytes (float32 [B / 4])
// feeding a reshape (a view: no work, and nothing streamed back), device_iterations 16, run
// with a host array of 16 rows; reported as stream bytes per second. depth:2 is the default
// prefetch_depth: an io thread fills device-side buffers ahead; below kInPlaceMinBytes
// (256 KiB) the device copies each into its arena, from there on the step reads it in
// place (one copy in all), and from kStreamingCopyMinBytes (8 MiB) the io thread writes it
// with streaming stores. A device that finds its next buffer not yet started produces it
// itself. depth:0, for reference, has the device copy from the host array itself.
// Baselines, single-thread memcpy in the same run: BM_MemcpyRows moves the same bytes in
// the same pattern as a run (row k % 16 of a 16-row host array into one buffer, so from
// DRAM once the array outgrows the caches): the bandwidth a host-to-device copy can
// reach; BM_Memcpy copies one buffer into another over and over (cache-hot for small
// sizes), an upper bound no stream of fresh data meets. Counters from the last run's
// stream stats: `hidden` (1 - exposed_wait_ns / transfer_ns), `occupancy` (buffers ready
// when the device took one), run_us, xfer_us (io thread copying) and wait_us (device
// waiting for a buffer).
#include <benchmark/benchmark.h>
#include <plexus/plexus.hpp>

#include "bench/memcpy_baseline.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace {

constexpr int64_t kIterations = 16;

using bench::aligned;
using bench::BM_Memcpy;

void BM_MemcpyRows(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  auto src = aligned(bytes * kIterations), dst = aligned(bytes);
  std::memset(src.get(), 1, bytes * kIterations);
  std::memset(dst.get(), 0, bytes);
  size_t row = 0;
  for (auto _ : state) {
    std::memcpy(dst.get(), src.get() + row * bytes, bytes);
    row = (row + 1) % kIterations;
    benchmark::DoNotOptimize(dst.get());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

void BM_H2DStream(benchmark::State& state) {
  const int64_t elements = state.range(0) / 4;
  plx::Ir ir;
  const auto [stream, x] = ir.h2d_stream("x", PLX_DTYPE_FLOAT32, {elements});
  ir.reshape(x, {elements, 1});
  plx::SessionOptions opts;
  opts.device_iterations = kIterations;
  opts.prefetch_depth = state.range(1);
  plx::Session session(ir, opts);
  const std::vector<float> host(static_cast<size_t>(kIterations * elements), 1.0f);
  const std::vector<plx::HostArray> inputs{plx::HostArray(stream, host.data(), session.host_shape(stream))};
  session.run(inputs);
  for (auto _ : state) session.run(inputs);
  const plx_stream_stats s = session.stream_stats();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kIterations * state.range(0));
  state.counters["hidden"] =
      s.transfer_ns > 0 ? std::clamp(1.0 - static_cast<double>(s.exposed_wait_ns) / static_cast<double>(s.transfer_ns), 0.0, 1.0)
                        : 0.0;
  state.counters["occupancy"] = s.mean_occupancy;
  state.counters["run_us"] = static_cast<double>(s.run_ns) / 1e3;
  state.counters["xfer_us"] = static_cast<double>(s.transfer_ns) / 1e3;
  state.counters["wait_us"] = static_cast<double>(s.exposed_wait_ns) / 1e3;
}

}  // namespace

BENCHMARK(BM_Memcpy)->RangeMultiplier(4)->Range(1 << 10, 64 << 20)->ArgName("bytes");
BENCHMARK(BM_MemcpyRows)->RangeMultiplier(4)->Range(1 << 10, 64 << 20)->ArgName("bytes");
BENCHMARK(BM_H2DStream)
    ->ArgsProduct({benchmark::CreateRange(1 << 10, 64 << 20, 4), {2, 0}})
    ->ArgNames({"bytes", "depth"})
    ->UseRealTime();

BENCHMARK_MAIN();
