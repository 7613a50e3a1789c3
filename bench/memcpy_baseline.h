// The memcpy baseline the bandwidth benchmarks compare against in the same run
// (remote_buffer_bench, h2d_bench): 64-byte-aligned buffers (like device arenas and queue
// slots) and a single-thread copy between two of them.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace bench {

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};

/// `bytes` bytes, 64-byte aligned (rounded up to a multiple of 64).
inline std::unique_ptr<std::byte, AlignedFree> aligned(size_t bytes) {
  return std::unique_ptr<std::byte, AlignedFree>(static_cast<std::byte*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
}

/// Copies range(0) bytes from one buffer into another, over and over (cache-hot while
/// both fit the caches): bytes per second.
inline void BM_Memcpy(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  auto src = aligned(bytes), dst = aligned(bytes);
  std::memset(src.get(), 1, bytes);
  std::memset(dst.get(), 0, bytes);
  for (auto _ : state) {
    std::memcpy(dst.get(), src.get(), bytes);
    benchmark::DoNotOptimize(dst.get());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

}  // namespace bench
