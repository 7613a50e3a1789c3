// The sum of a contiguous row in a fixed order (reduce_sum's inner loop, reductions.cpp),
// shared with kernels that sum rows they make themselves: the conv bias gradient of the
// conv -> max-pool fusion (conv_pool.cpp) gives reduce_sum's bits that way.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <type_traits>

namespace plexus::ops {

// Addition that wraps around for int32 (no signed-overflow UB) and is plain for float.
template <class T>
inline T plus(T a, T b) {
  if constexpr (std::is_same_v<T, int32_t>) {
    return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
  } else {
    return a + b;
  }
}

// Partial sums of row_sum: 32 floats are eight SSE registers (four AVX2), enough independent
// adds to keep a core's adders busy, so a row sums at cache / memory bandwidth.
constexpr int64_t kRowSumLanes = 32;

/// Sum of px[0, n): element i goes into partial sum i % kRowSumLanes, and the partial sums
/// are then added pairwise (a fixed tree); rows shorter than that are summed left to right.
/// Plain loops the compiler vectorises without reassociating, so the result has the same
/// bits on every run and every x86-64 CPU.
template <class T>
inline T row_sum(const T* px, int64_t n) {
  if (n < kRowSumLanes) return std::accumulate(px, px + n, T{0}, plus<T>);
  T lanes[kRowSumLanes];  // from the first block: zeroing them first costs short rows a memset
  std::copy(px, px + kRowSumLanes, lanes);
  int64_t i = kRowSumLanes;
  for (; i + kRowSumLanes <= n; i += kRowSumLanes) {
    for (int64_t j = 0; j < kRowSumLanes; ++j) lanes[j] = plus(lanes[j], px[i + j]);
  }
  for (int64_t j = 0; i + j < n; ++j) lanes[j] = plus(lanes[j], px[i + j]);
  for (int64_t width = kRowSumLanes / 2; width > 0; width /= 2) {
    for (int64_t j = 0; j < width; ++j) lanes[j] = plus(lanes[j], lanes[j + width]);
  }
  return lanes[0];
}

}  // namespace plexus::ops
