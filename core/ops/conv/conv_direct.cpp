#include "core/ops/conv/conv_direct.h"

#include "core/ops/conv/conv_direct_simd.h"
#include "core/ops/elementwise/relu.h"
#include <cstdlib>
#include <string>

namespace plexus::ops {

namespace {

using direct::Block;
using direct::kLanes;

constexpr int64_t kTileFilters = 6;  // filters per forward register tile

/// What the forward tiles of one image share: its x and y, the tap offsets, y's
/// filter-plane stride P, and the current V pixel vectors (all masked to mask_lanes when
/// a tile is Masked).
struct TileArgs {
  const float* xn;
  float* yn;
  const int64_t* offsets;
  int64_t k;
  int64_t plane;
  PixelVector vectors[2];
  const int32_t* mask_lanes;
};

// y tile [R filters from f0, V pixel vectors] = bias + sum over taps of w * x; wp holds the
// block's filters repacked as [K][kTileFilters], bias its R values or null.
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
    bv[0] = direct::load<Masked>(x0 + off, mask);
    if constexpr (V == 2) bv[1] = direct::load<Masked>(x1 + off, mask);
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
    for (int v = 0; v < V; ++v) direct::store<Masked>(t.yn + (f0 + r) * t.plane + t.vectors[v].y, mask, acc[r][v]);
  }
}

using TileFn = void (*)(const TileArgs&, const float*, const float*, int64_t);

template <int R>
constexpr TileFn pick(int v, bool masked) {
  if (v == 1) return masked ? tile<R, 1, true> : tile<R, 1, false>;
  return masked ? tile<R, 2, true> : tile<R, 2, false>;
}

TileFn tile_fn(int64_t rows, int v, bool masked) {
  return direct::dispatch<kTileFilters>(rows, [&]<int R>() { return pick<R>(v, masked); });
}

// Runs every filter block over the pixel vectors, two at a time (across output rows), all
// masked to their first `lanes` pixels when lanes < kLanes.
void run_vectors(const ConvGeometry& g, TileArgs& t, const std::vector<PixelVector>& vectors, int64_t lanes,
                 const float* wp, const float* b) {
  t.mask_lanes = direct::mask_lanes(lanes);
  const auto count = static_cast<int64_t>(vectors.size());
  for (int64_t i = 0; i < count; i += 2) {
    const int v = i + 1 < count ? 2 : 1;
    for (int u = 0; u < v; ++u) t.vectors[u] = vectors[static_cast<size_t>(i + u)];
    for (int64_t block = 0; block < direct::block_count(g.f, kTileFilters); ++block) {
      const Block fb = direct::block_of(g.f, kTileFilters, block);
      tile_fn(fb.size, v, lanes < kLanes)(t, wp + block * kTileFilters * t.k, b ? b + fb.start : nullptr, fb.start);
    }
  }
}

// The pixel vectors of an image as pairs (AVX-512 grad_input's 16-lane registers): row-major
// pairs, padded with a 0-lane vector to an even count, then ordered by (first dy row mod
// KH+1, first dy row, column) so that consecutive pairs are KH+1 dy rows apart (or in the
// same dy row): within a tile of them, no two (row, pair) hit the same dx addresses, and
// no load waits for a store of its own tile.
std::vector<LanedVector> pair_vectors(const ConvGeometry& g) {
  std::vector<LanedVector> halves;
  for (int64_t oh = 0; oh < g.oh; ++oh) {
    for (int64_t ow0 = 0; ow0 < g.ow; ow0 += kLanes) {
      halves.push_back({oh * g.w + ow0, oh * g.ow + ow0, std::min(kLanes, g.ow - ow0)});
    }
  }
  if (halves.size() % 2 != 0) halves.push_back({0, 0, 0});
  std::vector<size_t> pairs(halves.size() / 2);
  for (size_t k = 0; k < pairs.size(); ++k) pairs[k] = k;
  const int64_t span = g.kh + 1;
  std::stable_sort(pairs.begin(), pairs.end(), [&](size_t a, size_t b) {
    const int64_t ra = halves[2 * a].y / g.ow, rb = halves[2 * b].y / g.ow;
    return ra % span != rb % span ? ra % span < rb % span : ra < rb;
  });
  std::vector<LanedVector> ordered;
  for (const size_t k : pairs) ordered.insert(ordered.end(), {halves[2 * k], halves[2 * k + 1]});
  return ordered;
}

}  // namespace

void direct::repack_filters(const ConvGeometry& g, const float* w, float* wp, int64_t tile) {
  const int64_t k = g.k();
  for (int64_t block = 0; block < direct::block_count(g.f, tile); ++block, wp += k * tile) {
    const Block fb = direct::block_of(g.f, tile, block);
    for (int64_t l = 0; l < k; ++l) {
      for (int64_t r = 0; r < tile; ++r) wp[l * tile + r] = r < fb.size ? w[(fb.start + r) * k + l] : 0.0f;
    }
  }
}

bool DirectConv::applies(const ConvGeometry& g) {
  static const bool cpu = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return cpu && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
}

DirectIsa DirectConv::best_isa() {
  static const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                             __builtin_cpu_supports("avx512dq");
  if (const char* e = std::getenv("PLEXUS_CONV_ISA"); e && std::string(e) == "avx2") return DirectIsa::Avx2;
  return avx512 ? DirectIsa::Avx512 : DirectIsa::Avx2;
}

DirectConv::DirectConv(const ConvGeometry& g, DirectIsa isa) : g_(g), isa_(isa) {
  for (int64_t c = 0; c < g.c; ++c) {
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) offsets_.push_back((c * g.h + i) * g.w + j);
    }
  }
  for (int64_t i = 0; i < g.kh; ++i) {
    for (int64_t j = 0; j < g.kw; ++j) {
      for (int64_t c = 0; c < g.c; ++c) input_rows_.push_back((c * g.h + i) * g.w + j);
    }
  }
  for (int64_t j = 0; j < g.kw; ++j) {
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t c = 0; c < g.c; ++c) column_rows_.push_back((c * g.h + i) * g.w + j);
    }
  }
  const int64_t per_row = g.ow / kLanes;
  for (int64_t oh = 0; oh < g.oh; ++oh) {
    for (int64_t ow0 = 0; ow0 < g.ow; ow0 += kLanes) {
      (ow0 < per_row * kLanes ? full_ : tail_).push_back({oh * g.w + ow0, oh * g.ow + ow0});
    }
  }
  halves_ = pair_vectors(g);
}

int64_t DirectConv::forward_scratch_floats() const {
  return direct::block_count(g_.f, kTileFilters) * kTileFilters * g_.k();
}

void DirectConv::forward(const float* x, const float* w, const float* b, float* y, float* scratch, bool relu) const {
  forward_images(x, w, b, y, scratch, relu, 0, g_.n);
}

void DirectConv::forward_images(const float* x, const float* w, const float* b, float* y, float* scratch, bool relu,
                                int64_t n0, int64_t count) const {
  if (isa_ == DirectIsa::Avx512) {
    forward_avx512(x, w, b, y, scratch, relu, n0, count);
    return;
  }
  direct::repack_filters(g_, w, scratch, kTileFilters);
  for (int64_t n = n0; n < n0 + count; ++n) {
    TileArgs t{x + n * g_.image(), y + (n - n0) * g_.out_image(), offsets_.data(), g_.k(), g_.p(), {}, nullptr};
    run_vectors(g_, t, full_, kLanes, scratch, b);
    if (!tail_.empty()) run_vectors(g_, t, tail_, g_.ow % kLanes, scratch, b);
    if (relu) relu_in_place(t.yn, g_.out_image());
  }
}

}  // namespace plexus::ops
