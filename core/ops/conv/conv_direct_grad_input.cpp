// DirectConv::grad_input (conv_direct.h): dx[n, c, oh+i, ow+j] += sum over f of
// w[f, c, i, j] * dy[n, f, oh, ow], for pixel vectors of dy and every (tap, channel) row
// (i, j, c): the sum over f in registers, then one masked read-modify-write of dx per tile
// row and vector. Rows go tap-major, channel-minor, in balanced blocks of up to 6, so that
// a 1-channel layer still fills a tile (with 6 taps).
#include <algorithm>

#include "core/ops/conv/conv_direct.h"
#include "core/ops/conv/conv_direct_simd.h"

namespace plexus::ops {

namespace {

using direct::Block;
using direct::kLanes;

constexpr int64_t kTileRows = 6;  // (tap, channel) rows per register tile

/// What the tiles of one image share: dy and dx of the image, dy's filter-plane stride P,
/// F, and the current pixel vectors (all masked to mask_lanes when a tile is Masked).
struct InputArgs {
  const float* dyn;
  float* dxn;
  int64_t plane, filters;
  PixelVector vectors[4];
  const int32_t* mask_lanes;
};

// dx at [R rows, V pixel vectors] += sum over f of w * dy: row r's weights are wp[f *
// kTileRows + r] and its dx offset, relative to a vector's window, row_offsets[r].
template <int R, int V, bool Masked>
PLEXUS_AVX2 void tile(const InputArgs& t, const float* wp, const int64_t* row_offsets) {
  const __m256i mask = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.mask_lanes));
  const int64_t plane = t.plane, filters = t.filters;
  const float* dy[V];
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v) dy[v] = t.dyn + t.vectors[v].y;
  __m256 acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_ps();
  }
  for (int64_t f = 0; f < filters; ++f, wp += kTileRows) {
    __m256 d[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) d[v] = direct::load<Masked>(dy[v] + f * plane, mask);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_broadcast_ss(wp + r);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(a, d[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      float* out = t.dxn + row_offsets[r] + t.vectors[v].x;
      direct::store<Masked>(out, mask, _mm256_add_ps(direct::load<Masked>(out, mask), acc[r][v]));
    }
  }
}

using TileFn = void (*)(const InputArgs&, const float*, const int64_t*);

template <int R>
constexpr TileFn pick(int64_t v, bool masked) {
  if constexpr (R <= 2) {
    if (v == 4) return masked ? tile<R, 4, true> : tile<R, 4, false>;
    if (v == 3) return masked ? tile<R, 3, true> : tile<R, 3, false>;
  }
  if (v == 2) return masked ? tile<R, 2, true> : tile<R, 2, false>;
  return masked ? tile<R, 1, true> : tile<R, 1, false>;
}

TileFn tile_fn(int64_t rows, int64_t v, bool masked) {
  return direct::dispatch<kTileRows>(rows, [&]<int R>() { return pick<R>(v, masked); });
}

// wp[(block*F + f)*kTileRows + r] = w[f, c, i, j] for row block*... + r = (i*KW + j)*C + c of
// each block, 0 past the block's last row.
void repack_weights(const ConvGeometry& g, const float* w, float* wp) {
  const int64_t taps = g.kh * g.kw, rows = taps * g.c;
  for (int64_t block = 0; block < direct::block_count(rows, kTileRows); ++block) {
    const Block rb = direct::block_of(rows, kTileRows, block);
    for (int64_t f = 0; f < g.f; ++f, wp += kTileRows) {
      for (int64_t r = 0; r < kTileRows; ++r) {
        const int64_t row = rb.start + r, tap = row / g.c, c = row % g.c;
        wp[r] = r < rb.size ? w[(f * g.c + c) * taps + tap] : 0.0f;
      }
    }
  }
}

// Every block of rows over the pixel vectors, up to 4 (2 when a block has more than 2 rows)
// at a time, all masked to their first `lanes` pixels when lanes < kLanes.
void run_vectors(const ConvGeometry& g, InputArgs& t, const std::vector<PixelVector>& vectors, int64_t lanes,
                 const float* wp, const int64_t* row_offsets) {
  t.mask_lanes = direct::mask_lanes(lanes);
  const int64_t rows = g.kh * g.kw * g.c, per_tile = direct::block_of(rows, kTileRows, 0).size <= 2 ? 4 : 2;
  const auto count = static_cast<int64_t>(vectors.size());
  for (int64_t i0 = 0; i0 < count; i0 += per_tile) {
    const int64_t v = std::min(per_tile, count - i0);
    for (int64_t u = 0; u < v; ++u) t.vectors[u] = vectors[static_cast<size_t>(i0 + u)];
    for (int64_t block = 0; block < direct::block_count(rows, kTileRows); ++block) {
      const Block rb = direct::block_of(rows, kTileRows, block);
      tile_fn(rb.size, v, lanes < kLanes)(t, wp + block * g.f * kTileRows, row_offsets + rb.start);
    }
  }
}

}  // namespace

int64_t DirectConv::grad_input_scratch_floats() const {
  if (isa_ == DirectIsa::Avx512) return grad_input_avx512_scratch_floats();
  return direct::block_count(g_.kh * g_.kw * g_.c, kTileRows) * kTileRows * g_.f;
}

void DirectConv::grad_input(const float* dy, const float* w, float* dx, float* scratch) const {
  if (isa_ == DirectIsa::Avx512) {
    grad_input_avx512(dy, w, dx, scratch);
    return;
  }
  repack_weights(g_, w, scratch);
  std::fill(dx, dx + g_.n * g_.image(), 0.0f);
  for (int64_t n = 0; n < g_.n; ++n) {
    InputArgs t{dy + n * g_.out_image(), dx + n * g_.image(), g_.p(), g_.f, {}, nullptr};
    run_vectors(g_, t, full_, kLanes, scratch, input_rows_.data());
    if (!tail_.empty()) run_vectors(g_, t, tail_, g_.ow % kLanes, scratch, input_rows_.data());
  }
}

}  // namespace plexus::ops
