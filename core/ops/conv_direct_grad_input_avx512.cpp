// DirectConv::grad_input on AVX-512 CPUs (conv_direct.h): dx[n, c, oh+i, ow+j] += sum over f
// of w[f, c, i, j] * dy[n, f, oh, ow], as the AVX2 kernel (conv_direct_grad_input.cpp) but
// with 16-lane registers: each holds a pair of 8-pixel vectors of dy (halves_, consecutive
// in row-major order, so that an 8-pixel-wide dy fills every lane), packed per image into
// scratch as [pairs][F][16], zeros in the lanes past a row's end (a tile then reads V
// sequential streams of F*16 floats). A tile sums R rows x V pairs over the F
// filters in registers, then adds each half to dx (k-masked read-modify-write).
// Rows go in (j, i, c) order, blocked within each column tap j: the rows of one tile never
// hit partly overlapping dx addresses (same c and dx row, columns 1..7 apart), whose stores
// a following load could not forward from. Tiles go in (pair group, row block) order.
#include <algorithm>

#include "core/ops/conv_direct.h"
#include "core/ops/conv_direct_simd.h"

namespace plexus::ops {

namespace {

using direct::Block;
using direct::kLanes;
using direct::kPair;
using direct::lane_mask;
using direct::max_pairs;

constexpr int64_t kTileRows = 6;   // (tap, channel) rows per register tile at most

/// What the tiles of one image share: dy packed as [pairs][F][16] (dyp), dx of the image, F,
/// and the halves (2 per pair).
struct PairArgs {
  const float* dyp;
  float* dxn;
  int64_t filters;
  const LanedVector* halves;
};

/// out[0 .. lanes) += v[0 .. lanes), the other lanes untouched (k-masked). A full vector
/// goes unmasked: a later load of the same address then takes the stored value from the
/// store queue, which the CPU may not do for masked stores.
PLEXUS_AVX512 inline void add_half(float* out, int64_t lanes, __m256 v) {
  if (lanes == kLanes) {
    _mm256_storeu_ps(out, _mm256_add_ps(_mm256_loadu_ps(out), v));
    return;
  }
  const __mmask8 m = lane_mask(lanes);
  _mm256_mask_storeu_ps(out, m, _mm256_add_ps(_mm256_maskz_loadu_ps(m, out), v));
}

// dx at [R rows, V pairs from pair0] += sum over f of w * dy: row r's weights are
// wp[f * kTileRows + r] and its dx offset, relative to a vector's window, row_offsets[r].
template <int R, int V>
PLEXUS_AVX512 void tile(const PairArgs& t, int64_t pair0, const float* wp, const int64_t* row_offsets) {
  // Locals only inside the filter loop, and every loop over acc unrolled (constant indices),
  // so that the accumulators stay in registers.
  const int64_t filters = t.filters, stride = filters * kPair;
  const float* d = t.dyp + pair0 * stride;
  __m512 acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  for (int64_t f = 0; f < filters; ++f, wp += kTileRows, d += kPair) {
    __m512 dv[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) dv[v] = _mm512_loadu_ps(d + v * stride);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(wp[r]);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(a, dv[v], acc[r][v]);
    }
  }
  // The halves and row offsets in locals first: the stores to dx could alias t's arrays.
  LanedVector h[2 * V];
  float* out[R];
#pragma GCC unroll 16
  for (int u = 0; u < 2 * V; ++u) h[u] = t.halves[2 * pair0 + u];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) out[r] = t.dxn + row_offsets[r];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      add_half(out[r] + h[2 * v].x, h[2 * v].lanes, _mm512_extractf32x8_ps(acc[r][v], 0));
      add_half(out[r] + h[2 * v + 1].x, h[2 * v + 1].lanes, _mm512_extractf32x8_ps(acc[r][v], 1));
    }
  }
}

using TileFn = void (*)(const PairArgs&, int64_t, const float*, const int64_t*);

/// The tile of R rows and `pairs` pairs (clamped to [1, max_pairs(R)]).
TileFn tile_fn(int64_t rows, int64_t pairs) {
  return direct::dispatch<kTileRows>(rows, [&]<int R>() {
    return direct::dispatch<max_pairs(R)>(pairs, [&]<int V>() -> TileFn { return tile<R, V>; });
  });
}

/// Row blocks of g: balanced blocks of at most kTileRows within each column tap's C*KH rows.
struct RowBlocks {
  int64_t per_column, count;

  explicit RowBlocks(const ConvGeometry& g)
      : per_column(direct::block_count(g.c * g.kh, kTileRows)), count(g.kw * per_column) {}

  /// Block b's rows, as a range of (j, i, c) row indices.
  Block block(const ConvGeometry& g, int64_t b) const {
    const Block in_column = direct::block_of(g.c * g.kh, kTileRows, b % per_column);
    return {(b / per_column) * g.c * g.kh + in_column.start, in_column.size};
  }
};

// wp[(b*F + f)*kTileRows + r] = w[f, c, i, j] for row start + r = (j*KH + i)*C + c of block
// b, 0 past the block's last row.
void repack_weights(const ConvGeometry& g, const float* w, float* wp) {
  const RowBlocks blocks(g);
  const int64_t column = g.c * g.kh;
  for (int64_t b = 0; b < blocks.count; ++b) {
    const Block rb = blocks.block(g, b);
    for (int64_t f = 0; f < g.f; ++f, wp += kTileRows) {
      for (int64_t r = 0; r < kTileRows; ++r) {
        const int64_t row = rb.start + r, j = row / column, i = row % column / g.c, c = row % g.c;
        wp[r] = r < rb.size ? w[((f * g.c + c) * g.kh + i) * g.kw + j] : 0.0f;
      }
    }
  }
}

// dyp[(k*F + f)*16 + s*8 + l] = dyn[f*P + halves[2k+s].y + l] for l < its lanes, else 0.
PLEXUS_AVX512 void pack_dy(const ConvGeometry& g, const std::vector<LanedVector>& halves, const float* dyn,
                           float* dyp) {
  for (size_t k = 0; k < halves.size(); k += 2, dyp += g.f * kPair) {
    const LanedVector &lo = halves[k], &hi = halves[k + 1];
    const __mmask8 mlo = lane_mask(lo.lanes), mhi = lane_mask(hi.lanes);
    for (int64_t f = 0; f < g.f; ++f) {
      const float* src = dyn + f * g.p();
      const __m512 v = _mm512_insertf32x8(_mm512_setzero_ps(), _mm256_maskz_loadu_ps(mlo, src + lo.y), 0);
      _mm512_storeu_ps(dyp + f * kPair, _mm512_insertf32x8(v, _mm256_maskz_loadu_ps(mhi, src + hi.y), 1));
    }
  }
}

}  // namespace

int64_t DirectConv::grad_input_avx512_scratch_floats() const {
  return RowBlocks(g_).count * g_.f * kTileRows + g_.f * static_cast<int64_t>(halves_.size()) * kLanes;
}

void DirectConv::grad_input_avx512(const float* dy, const float* w, float* dx, float* scratch) const {
  const RowBlocks blocks(g_);
  float* dyp = scratch + blocks.count * g_.f * kTileRows;
  const auto pairs = static_cast<int64_t>(halves_.size() / 2);
  // The first block of a column tap is its largest, and max_pairs falls with the rows.
  const int64_t per_tile = max_pairs(static_cast<int>(blocks.block(g_, 0).size));
  repack_weights(g_, w, scratch);
  std::fill(dx, dx + g_.n * g_.image(), 0.0f);
  for (int64_t n = 0; n < g_.n; ++n) {
    pack_dy(g_, halves_, dy + n * g_.out_image(), dyp);
    const PairArgs t{dyp, dx + n * g_.image(), g_.f, halves_.data()};
    for (int64_t k = 0; k < pairs; k += per_tile) {  // a group of pairs stays in L1 for every block
      for (int64_t b = 0; b < blocks.count; ++b) {
        const Block rb = blocks.block(g_, b);
        tile_fn(rb.size, std::min(per_tile, pairs - k))(t, k, scratch + b * g_.f * kTileRows,
                                                        column_rows_.data() + rb.start);
      }
    }
  }
}

}  // namespace plexus::ops
