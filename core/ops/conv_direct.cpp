#include "core/ops/conv_direct.h"

#include <immintrin.h>

#include <algorithm>

namespace plexus::ops {

namespace {

constexpr int64_t kTileFilters = 6;  // filters per register tile
constexpr int64_t kLanes = 8;        // floats per AVX register

#define PLEXUS_AVX2 __attribute__((target("avx2,fma")))

/// kLanes output pixels along an output row (or fewer, masked): x offset of its first
/// window's top-left tap and y offset within a filter plane.
struct PixelVector {
  int64_t x, y;
};

/// What the tiles of one image share: its x and y, the tap offsets, y's filter-plane
/// stride P, and the current V pixel vectors (all masked to mask_lanes, -1 = on, when a
/// tile is Masked).
struct TileArgs {
  const float* xn;
  float* yn;
  const int64_t* offsets;
  int64_t k;
  int64_t plane;
  PixelVector vectors[2];
  const int32_t* mask_lanes;
};

template <bool Masked>
PLEXUS_AVX2 __m256 load(const float* p, __m256i mask) {
  if constexpr (Masked) {
    return _mm256_maskload_ps(p, mask);
  } else {
    return _mm256_loadu_ps(p);
  }
}

template <bool Masked>
PLEXUS_AVX2 void store(float* p, __m256i mask, __m256 v) {
  if constexpr (Masked) {
    _mm256_maskstore_ps(p, mask, v);
  } else {
    _mm256_storeu_ps(p, v);
  }
}

// y tile [R filters from f0, V pixel vectors] = sum over taps of w * x (+ bias); wp holds
// the block's filters repacked as [K][kTileFilters], bias its R values or null.
template <int R, int V, bool Masked>
PLEXUS_AVX2 void tile(const TileArgs& t, const float* wp, const float* bias, int64_t f0) {
  // Locals only inside the tap loop, and every loop over acc unrolled (constant indices), so
  // that the accumulators stay in registers.
  const __m256i mask = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.mask_lanes));
  const float* x0 = t.xn + t.vectors[0].x;
  const float* x1 = t.xn + t.vectors[V - 1].x;
  const int64_t* offsets = t.offsets;
  const float* wl = wp;
  const int64_t k = t.k;
  __m256 acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const __m256 b = bias ? _mm256_set1_ps(bias[r]) : _mm256_setzero_ps();
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) acc[r][v] = b;
  }
  for (int64_t l = 0; l < k; ++l, wl += kTileFilters) {
    const int64_t off = offsets[l];
    __m256 bv[V];
    bv[0] = load<Masked>(x0 + off, mask);
    if constexpr (V == 2) bv[1] = load<Masked>(x1 + off, mask);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_broadcast_ss(wl + r);
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(a, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) {
      store<Masked>(t.yn + (f0 + r) * t.plane + t.vectors[v].y, mask, acc[r][v]);
    }
  }
}

using TileFn = void (*)(const TileArgs&, const float*, const float*, int64_t);

template <int R>
constexpr TileFn pick(int v, bool masked) {
  if (v == 1) return masked ? tile<R, 1, true> : tile<R, 1, false>;
  return masked ? tile<R, 2, true> : tile<R, 2, false>;
}

TileFn tile_fn(int64_t rows, int v, bool masked) {
  switch (rows) {
    case 1:
      return pick<1>(v, masked);
    case 2:
      return pick<2>(v, masked);
    case 3:
      return pick<3>(v, masked);
    case 4:
      return pick<4>(v, masked);
    case 5:
      return pick<5>(v, masked);
    default:
      return pick<6>(v, masked);
  }
}

/// Filters of block `block` of ceil(F / kTileFilters) blocks of near-equal size (20 filters
/// are 5+5+5+5, not 6+6+6+2: a narrow tile wastes the loads it shares with few FMAs).
struct FilterBlock {
  int64_t f0, rows;
};

FilterBlock filter_block(const ConvGeometry& g, int64_t block) {
  const int64_t blocks = (g.f + kTileFilters - 1) / kTileFilters, base = g.f / blocks, extra = g.f % blocks;
  return {block * base + std::min(block, extra), base + (block < extra ? 1 : 0)};
}

// wp[(block*K + l)*kTileFilters + r] = w[(f0 + r)*K + l] for the block's filters f0 + r.
void repack_filters(const ConvGeometry& g, const float* w, float* wp) {
  const int64_t k = g.k();
  for (int64_t block = 0; block * kTileFilters < g.f; ++block, wp += k * kTileFilters) {
    const FilterBlock fb = filter_block(g, block);
    for (int64_t l = 0; l < k; ++l) {
      for (int64_t r = 0; r < kTileFilters; ++r) wp[l * kTileFilters + r] = r < fb.rows ? w[(fb.f0 + r) * k + l] : 0.0f;
    }
  }
}

// Runs every filter block over the pixel vectors vector_at(0 .. count-1), two at a time, all
// of them masked to their first `lanes` pixels when masked.
template <class VectorAt>
void run_vectors(const ConvGeometry& g, TileArgs& t, int64_t count, int64_t lanes, VectorAt vector_at, const float* wp,
                 const float* b) {
  // Lanes [0, lanes) on, read from a constant table (a 256-bit load that never waits for
  // narrower stores): kLanes ones then kLanes zeros.
  static constexpr int32_t kMaskTable[2 * kLanes] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  t.mask_lanes = kMaskTable + (kLanes - lanes);
  for (int64_t i = 0; i < count; i += 2) {
    const int v = i + 1 < count ? 2 : 1;
    for (int u = 0; u < v; ++u) t.vectors[u] = vector_at(i + u);
    for (int64_t block = 0; block * kTileFilters < g.f; ++block) {
      const FilterBlock fb = filter_block(g, block);
      tile_fn(fb.rows, v, lanes < kLanes)(t, wp + block * kTileFilters * t.k, b ? b + fb.f0 : nullptr, fb.f0);
    }
  }
}

// One image: the full vectors of kLanes pixels in row-major order, paired across output rows
// when a row has an odd number of them, then each row's last, partial vector (OW % kLanes
// pixels), paired likewise.
void forward_image(const ConvGeometry& g, TileArgs& t, const float* wp, const float* b) {
  const int64_t per_row = g.ow / kLanes, tail = g.ow % kLanes;
  run_vectors(
      g, t, g.oh * per_row, kLanes,
      [&](int64_t i) {
        const int64_t oh = i / per_row, ow0 = i % per_row * kLanes;
        return PixelVector{oh * g.w + ow0, oh * g.ow + ow0};
      },
      wp, b);
  if (tail == 0) return;
  run_vectors(
      g, t, g.oh, tail,
      [&](int64_t oh) {
        return PixelVector{oh * g.w + per_row * kLanes, oh * g.ow + per_row * kLanes};
      },
      wp, b);
}

}  // namespace

bool direct_forward_applies(const ConvGeometry& g) {
  static const bool cpu = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return cpu && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
}

std::vector<int64_t> direct_tap_offsets(const ConvGeometry& g) {
  std::vector<int64_t> offsets;
  offsets.reserve(static_cast<size_t>(g.k()));
  for (int64_t c = 0; c < g.c; ++c) {
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) offsets.push_back((c * g.h + i) * g.w + j);
    }
  }
  return offsets;
}

int64_t direct_forward_scratch_floats(const ConvGeometry& g) {
  return (g.f + kTileFilters - 1) / kTileFilters * kTileFilters * g.k();
}

void direct_forward(const ConvGeometry& g, const int64_t* offsets, const float* x, const float* w, const float* b,
                    float* y, float* scratch) {
  repack_filters(g, w, scratch);
  for (int64_t n = 0; n < g.n; ++n) {
    TileArgs t{x + n * g.image(), y + n * g.out_image(), offsets, g.k(), g.p(), {}, nullptr};
    forward_image(g, t, scratch, b);
  }
}

}  // namespace plexus::ops
