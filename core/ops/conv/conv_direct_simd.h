// AVX2 and AVX-512 helpers shared by the direct conv kernels (conv_direct.h); x86-64 only.
// Functions marked PLEXUS_AVX2 may run only where the CPU has AVX2 and FMA; the rest are
// plain code any x86-64 CPU runs (the AVX-512 kernels' files compile only their
// PLEXUS_AVX512 functions for AVX-512).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "core/ops/conv/conv_geometry.h"

#define PLEXUS_AVX2 __attribute__((target("avx2,fma")))
// Functions marked PLEXUS_AVX512 may run only where the CPU has AVX-512 F, VL and DQ.
#define PLEXUS_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx2,fma")))

namespace plexus::ops::direct {

constexpr int64_t kLanes = 8;  // floats per AVX register

/// Mask lanes [0, lanes) on (-1), the rest off, for _mm256_maskload_ps: a pointer into a
/// constant table, so that the 256-bit load of the mask never waits for narrower stores.
inline const int32_t* mask_lanes(int64_t lanes) {
  static constexpr int32_t kTable[2 * kLanes] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return kTable + (kLanes - lanes);
}

template <bool Masked>
PLEXUS_AVX2 inline __m256 load(const float* p, __m256i mask) {
  if constexpr (Masked) {
    return _mm256_maskload_ps(p, mask);
  } else {
    return _mm256_loadu_ps(p);
  }
}

template <bool Masked>
PLEXUS_AVX2 inline void store(float* p, __m256i mask, __m256 v) {
  if constexpr (Masked) {
    _mm256_maskstore_ps(p, mask, v);
  } else {
    _mm256_storeu_ps(p, v);
  }
}

// AVX-512 kernels hold a pair of 8-pixel vectors (PixelVector) per 16-lane register.
constexpr int64_t kPair = 2 * kLanes;
constexpr int kMaxPairs = 8;  // pairs per AVX-512 tile at most

/// Pairs V per AVX-512 tile of `rows` rows R (filters, or (tap, channel) rows): as many as
/// fit the 32 registers with the R*V accumulators, the V pairs' inputs and one broadcast
/// weight (more, and the compiler reloads each input once per row), at most kMaxPairs.
constexpr int max_pairs(int rows) { return std::min(kMaxPairs, 31 / (rows + 1)); }

/// The k-mask of lanes [0, lanes) of an 8-lane vector, lanes in [0, 8].
inline __mmask8 lane_mask(int64_t lanes) { return static_cast<__mmask8>((1u << lanes) - 1u); }

/// The k-mask of a pair's 16 lanes when its first vector is full and its second has `lanes`.
inline __mmask16 pair_mask(int64_t lanes) { return static_cast<__mmask16>((1u << (kLanes + lanes)) - 1u); }

/// Block `block` of ceil(total / max) blocks of near-equal size over [0, total): 20 filters in
/// blocks of at most 6 are 5+5+5+5, not 6+6+6+2 (a narrow tile wastes the loads it shares).
struct Block {
  int64_t start, size;
};

inline int64_t block_count(int64_t total, int64_t max) { return (total + max - 1) / max; }

inline Block block_of(int64_t total, int64_t max, int64_t block) {
  const int64_t blocks = block_count(total, max), base = total / blocks, extra = total % blocks;
  return {block * base + std::min(block, extra), base + (block < extra ? 1 : 0)};
}

/// Calls f(b, block b) for the blocks of block_of(total, max, b) in order: the same blocks
/// with one division in all (a kernel's inner loops call this once per tile group).
template <typename F>
void for_each_block(int64_t total, int64_t max, F&& f) {
  const int64_t blocks = block_count(total, max), base = total / blocks, extra = total % blocks;
  for (int64_t b = 0, start = 0; b < blocks; ++b) {
    const int64_t size = base + (b < extra ? 1 : 0);
    f(b, Block{start, size});
    start += size;
  }
}

/// wp[(block*K + l)*tile + r] = w[(start + r)*K + l] for each balanced block (block_of) of at
/// most `tile` filters of w [F, K], 0 past a block's last filter: the forward kernels' weights.
void repack_filters(const ConvGeometry& g, const float* w, float* wp, int64_t tile);

/// f.template operator()<N>() for N = n clamped to [1, Max]: picks the instantiation of a
/// register tile whose size N (rows, filters, taps, vectors) is a template parameter, e.g.
/// dispatch<6>(rows, [&]<int R>() { return pick<R>(v, masked); }).
template <int Max, typename F>
auto dispatch(int64_t n, F&& f) {
  const int64_t clamped = std::clamp<int64_t>(n, 1, Max);
  return [&]<int... I>(std::integer_sequence<int, I...>) {
    decltype(f.template operator()<1>()) out{};
    static_cast<void>(((clamped == I + 1 ? (out = f.template operator()<I + 1>(), true) : false) || ...));
    return out;
  }(std::make_integer_sequence<int, Max>{});
}

}  // namespace plexus::ops::direct
