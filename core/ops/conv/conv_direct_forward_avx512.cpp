// DirectConv::forward on AVX-512 CPUs (conv_direct.h): y[n, f, oh, ow] = b[f] + sum over taps
// (c, i, j), in that order, of w[f, c, i, j] * x[n, c, oh+i, ow+j], as the AVX2 kernel
// (conv_direct.cpp) but with 16-lane registers: each holds a pair of 8-pixel vectors
// (halves_), its x read at the tap's offset as two halves, or as 16 consecutive floats
// when every pair of the tile lies in one row. Lanes past a row's end compute values that
// are never stored; their x reads, up to 15 floats past the image, stay inside x (they run
// into the next images), else (the last image) the tiles mask them.
#include <algorithm>

#include "core/ops/conv/conv_direct.h"
#include "core/ops/conv/conv_direct_simd.h"
#include "core/ops/elementwise/relu.h"

namespace plexus::ops {

namespace {

using direct::Block;
using direct::kLanes;
using direct::lane_mask;
using direct::max_pairs;

constexpr int64_t kTileFilters = 6;  // filters per register tile at most

/// What the tiles of one image share: its x and y, the tap offsets, K, y's filter-plane
/// stride P, the halves (2 per pair), and whether they store relu of their sums.
struct ForwardArgs {
  const float* xn;
  float* yn;
  const int64_t* offsets;
  int64_t k, plane;
  const LanedVector* halves;
  bool relu;
};

/// How a tile reads x: each pair as two halves (Split), as 16 consecutive floats where every
/// pair's second vector follows a full first one in its row, or the 0-lane padding
/// (Joined), or as two halves reading only the pixels' lanes (Masked: the last image, whose
/// reads must not run past x).
enum class Reads { Split, Joined, Masked };

/// The pair of 8-float halves lo[0..8) | hi[0..8) in one register, read as R says; Split
/// and Joined read on past the pixels (lanes never stored), Masked reads only the lanes in
/// mlo / mhi (0 elsewhere).
template <Reads R>
PLEXUS_AVX512 inline __m512 load_pair(const float* lo, const float* hi, __mmask8 mlo, __mmask8 mhi) {
  if constexpr (R == Reads::Masked) {
    return _mm512_insertf32x8(_mm512_maskz_loadu_ps(mlo, lo), _mm256_maskz_loadu_ps(mhi, hi), 1);
  } else if constexpr (R == Reads::Joined) {
    return _mm512_loadu_ps(lo);
  } else {
    return _mm512_insertf32x8(_mm512_loadu_ps(lo), _mm256_loadu_ps(hi), 1);
  }
}

/// True when the pair is Joined: 16 consecutive floats of one row of x and of y from lo.
bool joined(const LanedVector& lo, const LanedVector& hi) {
  return lo.lanes == kLanes && (hi.lanes == 0 || hi.x == lo.x + kLanes);
}

/// p[0 .. lanes) = half Hi of v (lanes 0..7 or 8..15). A partial half goes by a k-masked
/// 16-lane store, the half moved to lanes 0..7 first: the compiler makes a masked 8-lane
/// store of an extracted half into a masked vextractf32x8 to memory, which faults on this
/// AMD EPYC VM when the page past the stored lanes is not mapped (masked lanes included).
template <int Hi>
PLEXUS_AVX512 inline void store_half(float* p, int64_t lanes, __m512 v) {
  if (lanes == kLanes) {
    _mm256_storeu_ps(p, _mm512_extractf32x8_ps(v, Hi));
    return;
  }
  if constexpr (Hi == 1) v = _mm512_insertf32x8(v, _mm512_extractf32x8_ps(v, 1), 0);
  _mm512_mask_storeu_ps(p, lane_mask(lanes), v);
}

/// yr at the pair (lo, hi) = v: one 16-lane store where hi follows a full lo in y (or is
/// the 0-lane padding), else one per half.
PLEXUS_AVX512 inline void store_pair(float* yr, const LanedVector& lo, const LanedVector& hi, __m512 v) {
  if (lo.lanes == kLanes && (hi.lanes == 0 || hi.y == lo.y + kLanes)) {
    _mm512_mask_storeu_ps(yr + lo.y, direct::pair_mask(hi.lanes), v);
    return;
  }
  store_half<0>(yr + lo.y, lo.lanes, v);
  store_half<1>(yr + hi.y, hi.lanes, v);
}

// y tile [R filters from f0, V pairs from pair0] = bias + sum over taps of w * x; wp holds
// the block's filters repacked as [K][kTileFilters], bias its R values or null.
template <int R, int V, Reads Kind>
PLEXUS_AVX512 void tile(const ForwardArgs& t, int64_t pair0, const float* wp, const float* bias, int64_t f0) {
  // Locals only inside the tap loop, and every loop over acc unrolled (constant indices), so
  // that the accumulators stay in registers.
  const LanedVector* h = t.halves + 2 * pair0;
  const float *lo[V], *hi[V];
  __mmask8 mlo[V], mhi[V];
#pragma GCC unroll 8
  for (int v = 0; v < V; ++v) {
    lo[v] = t.xn + h[2 * v].x, hi[v] = t.xn + h[2 * v + 1].x;
    mlo[v] = lane_mask(h[2 * v].lanes), mhi[v] = lane_mask(h[2 * v + 1].lanes);
  }
  __m512 acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const __m512 b = bias ? _mm512_set1_ps(bias[r]) : _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[r][v] = b;
  }
  const int64_t* offsets = t.offsets;
  const int64_t k = t.k;
  for (int64_t l = 0; l < k; ++l, wp += kTileFilters) {
    const int64_t off = offsets[l];
    __m512 xv[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) xv[v] = load_pair<Kind>(lo[v] + off, hi[v] + off, mlo[v], mhi[v]);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(wp[r]);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(a, xv[v], acc[r][v]);
    }
  }
  if (t.relu) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) acc[r][v] = relu_lanes(acc[r][v]);
    }
  }
  // The halves in locals first: the stores to y could alias t's arrays.
  LanedVector hv[2 * V];
#pragma GCC unroll 16
  for (int u = 0; u < 2 * V; ++u) hv[u] = h[u];
  float* const yn = t.yn + f0 * t.plane;
  const int64_t plane = t.plane;
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      if constexpr (Kind == Reads::Joined) {
        _mm512_mask_storeu_ps(yn + r * plane + hv[2 * v].y, direct::pair_mask(hv[2 * v + 1].lanes), acc[r][v]);
      } else {
        store_pair(yn + r * plane, hv[2 * v], hv[2 * v + 1], acc[r][v]);
      }
    }
  }
}

using TileFn = void (*)(const ForwardArgs&, int64_t, const float*, const float*, int64_t);

/// The tile of R filters and `pairs` pairs (clamped to [1, max_pairs(R)]) reading x as
/// `reads` says.
TileFn tile_fn(int64_t filters, int64_t pairs, Reads reads) {
  return direct::dispatch<kTileFilters>(filters, [&]<int R>() {
    return direct::dispatch<max_pairs(R)>(pairs, [&]<int V>() -> TileFn {
      return reads == Reads::Joined   ? tile<R, V, Reads::Joined>
             : reads == Reads::Masked ? tile<R, V, Reads::Masked>
                                      : tile<R, V, Reads::Split>;
    });
  });
}

/// How the tiles of pairs [p, p + v) of image n read x: Masked where reads up to 15 floats
/// past the image's end would run past x (the last image, or tiny images before it).
Reads reads_of(const ConvGeometry& g, const LanedVector* halves, int64_t p, int64_t v, int64_t n) {
  if ((g.n - 1 - n) * g.image() < direct::kPair) return Reads::Masked;
  for (int64_t u = p; u < p + v; ++u) {
    if (!joined(halves[2 * u], halves[2 * u + 1])) return Reads::Split;
  }
  return Reads::Joined;
}

}  // namespace

void DirectConv::forward_avx512(const float* x, const float* w, const float* b, float* y, float* scratch, bool relu,
                                int64_t n0, int64_t count) const {
  direct::repack_filters(g_, w, scratch, kTileFilters);
  const auto pairs = static_cast<int64_t>(halves_.size() / 2);
  const int64_t k = g_.k();
  // The first block is the largest, and max_pairs falls with the filters: every block takes it.
  const int64_t per_tile = max_pairs(static_cast<int>(direct::block_of(g_.f, kTileFilters, 0).size));
  for (int64_t n = n0; n < n0 + count; ++n) {
    const ForwardArgs t{x + n * g_.image(), y + (n - n0) * g_.out_image(), offsets_.data(), k, g_.p(), halves_.data(), relu};
    for (int64_t p = 0; p < pairs; p += per_tile) {
      const int64_t v = std::min(per_tile, pairs - p);
      const Reads reads = reads_of(g_, halves_.data(), p, v, n);
      direct::for_each_block(g_.f, kTileFilters, [&](int64_t block, const Block& fb) {
        tile_fn(fb.size, v, reads)(t, p, scratch + block * kTileFilters * k, b ? b + fb.start : nullptr, fb.start);
      });
    }
  }
}

}  // namespace plexus::ops
