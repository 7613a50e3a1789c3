// DirectConv::grad_input on AVX-512 CPUs (conv_direct.h): dx[n, c, oh+i, ow+j] += sum over f
// of w[f, c, i, j] * dy[n, f, oh, ow], as the AVX2 kernel (conv_direct_grad_input.cpp) but
// with 16-lane registers: each holds a pair of 8-pixel vectors of dy (halves_, consecutive
// in row-major order, so that an 8-pixel-wide dy fills every lane). A tile reads its pairs
// from dy in place where each is 16 consecutive floats of dy (a full vector and the next),
// else from scratch, where its group of pairs is packed as [pair][F][16] (zeros past a
// row's end). A tile sums R rows x V pairs over the F filters in registers, then adds them
// to dx (k-masked read-modify-writes, one per pair where it lies in one row of dx, else one
// per half; lanes past the pair's pixels, whatever dy held there, are never added).
// Rows go in (j, i, c) order, blocked within each column tap j: the rows of one tile never
// hit partly overlapping dx addresses (same c and dx row, columns 1..7 apart), whose stores
// a following load could not forward from. Tiles go in (pair group, row block) order.
#include <algorithm>

#include "core/ops/conv/conv_direct.h"
#include "core/ops/conv/conv_direct_simd.h"

namespace plexus::ops {

namespace {

using direct::Block;
using direct::kLanes;
using direct::kMaxPairs;
using direct::kPair;
using direct::lane_mask;
using direct::max_pairs;

constexpr int64_t kTileRows = 6;  // (tap, channel) rows per register tile at most

/// What the tiles of one group of pairs share: where each pair's 16 lanes of filter 0 are
/// (src, in dy itself or packed), the floats from one filter to the next (stride), dx of
/// the image, F, and the group's halves (2 per pair).
struct PairArgs {
  const float* src[kMaxPairs];
  int64_t stride;
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

/// out at the pair (lo, hi) += v: one 16-lane read-modify-write where hi follows a full lo
/// in dx (same row; or is the 0-lane padding), else one per half.
PLEXUS_AVX512 inline void add_pair(float* out, const LanedVector& lo, const LanedVector& hi, __m512 v) {
  if (lo.lanes == kLanes && hi.lanes == kLanes && hi.x == lo.x + kLanes) {
    _mm512_storeu_ps(out + lo.x, _mm512_add_ps(_mm512_loadu_ps(out + lo.x), v));
  } else if (lo.lanes == kLanes && (hi.lanes == 0 || hi.x == lo.x + kLanes)) {
    const __mmask16 m = direct::pair_mask(hi.lanes);
    _mm512_mask_storeu_ps(out + lo.x, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, out + lo.x), v));
  } else {
    add_half(out + lo.x, lo.lanes, _mm512_extractf32x8_ps(v, 0));
    add_half(out + hi.x, hi.lanes, _mm512_extractf32x8_ps(v, 1));
  }
}

// dx at [R rows, V pairs of t] += sum over f of w * dy: row r's weights are
// wp[f * kTileRows + r] and its dx offset, relative to a vector's window, row_offsets[r].
template <int R, int V>
PLEXUS_AVX512 void tile(const PairArgs& t, const float* wp, const int64_t* row_offsets) {
  // Locals only inside the filter loop, and every loop over acc unrolled (constant indices),
  // so that the accumulators stay in registers.
  const int64_t filters = t.filters, stride = t.stride;
  const float* src[V];
#pragma GCC unroll 8
  for (int v = 0; v < V; ++v) src[v] = t.src[v];
  __m512 acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  for (int64_t f = 0; f < filters; ++f, wp += kTileRows) {
    __m512 dv[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      dv[v] = _mm512_loadu_ps(src[v] + f * stride);
      __asm__("" : "+v"(dv[v]));  // a register: else each row's FMA reloads it from memory
    }
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
  for (int u = 0; u < 2 * V; ++u) h[u] = t.halves[u];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) out[r] = t.dxn + row_offsets[r];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      add_pair(out[r], h[2 * v], h[2 * v + 1], acc[r][v]);
    }
  }
}

using TileFn = void (*)(const PairArgs&, const float*, const int64_t*);

/// The tile of R rows and `pairs` pairs (clamped to [1, max_pairs(R)]).
TileFn tile_fn(int64_t rows, int64_t pairs) {
  return direct::dispatch<kTileRows>(rows, [&]<int R>() {
    return direct::dispatch<max_pairs(R)>(pairs, [&]<int V>() -> TileFn { return tile<R, V>; });
  });
}

/// Row blocks per column tap of g: balanced blocks of at most kTileRows of its C*KH rows.
int64_t blocks_per_column(const ConvGeometry& g) { return direct::block_count(g.c * g.kh, kTileRows); }

// wp[(b*F + f)*kTileRows + r] = w[f, c, i, j] for row start + r = (j*KH + i)*C + c of block
// b, 0 past the block's last row.
void repack_weights(const ConvGeometry& g, const float* w, float* wp) {
  const int64_t column = g.c * g.kh, filter = g.c * g.kh * g.kw;
  for (int64_t j = 0; j < g.kw; ++j) {
    direct::for_each_block(column, kTileRows, [&](int64_t, const Block& rb) {
      int64_t tap[kTileRows] = {};  // w offset of each row within a filter
      for (int64_t r = 0; r < rb.size; ++r) {
        const int64_t row = rb.start + r, i = row / g.c, c = row % g.c;
        tap[r] = (c * g.kh + i) * g.kw + j;
      }
      for (int64_t f = 0; f < g.f; ++f, wp += kTileRows) {
        for (int64_t r = 0; r < kTileRows; ++r) wp[r] = r < rb.size ? w[f * filter + tap[r]] : 0.0f;
      }
    });
  }
}

/// True when dy holds pair (lo, hi) as 16 consecutive floats of each filter plane (P floats):
/// lo full and hi right after it (or a 0-lane padding), all inside the plane. Lanes past
/// the pair's own pixels are then other pixels' dy, which only lanes never added to dx see.
bool in_place(const LanedVector& lo, const LanedVector& hi, int64_t plane) {
  return lo.lanes == kLanes && (hi.lanes == 0 || hi.y == lo.y + kLanes) && lo.y + kPair <= plane;
}

// dyp[(v*F + f)*16 + s*8 + l] = dyn[f*P + h[2v+s].y + l] for the V pairs of h, l < its lanes,
// else 0.
PLEXUS_AVX512 void pack_pairs(const ConvGeometry& g, const LanedVector* h, int64_t pairs, const float* dyn,
                              float* dyp) {
  for (int64_t v = 0; v < pairs; ++v) {
    const LanedVector lo = h[2 * v], hi = h[2 * v + 1];
    for (int64_t f = 0; f < g.f; ++f, dyp += kPair) {
      const float* src = dyn + f * g.p();
      const __m256 low = _mm256_maskz_loadu_ps(lane_mask(lo.lanes), src + lo.y);
      const __m512 x = _mm512_insertf32x8(_mm512_setzero_ps(), low, 0);
      _mm512_storeu_ps(dyp, _mm512_insertf32x8(x, _mm256_maskz_loadu_ps(lane_mask(hi.lanes), src + hi.y), 1));
    }
  }
}

/// Points t at the group's pairs (t.halves, V of them) in dyn, or packs them into dyp when
/// one of them is not in_place.
void point_pairs(const ConvGeometry& g, int64_t pairs, const float* dyn, float* dyp, PairArgs& t) {
  bool all = true;
  for (int64_t v = 0; v < pairs; ++v) all = all && in_place(t.halves[2 * v], t.halves[2 * v + 1], g.p());
  if (!all) pack_pairs(g, t.halves, pairs, dyn, dyp);
  t.stride = all ? g.p() : kPair;
  for (int64_t v = 0; v < pairs; ++v) t.src[v] = all ? dyn + t.halves[2 * v].y : dyp + v * g.f * kPair;
}

}  // namespace

int64_t DirectConv::grad_input_avx512_scratch_floats() const {
  return g_.kw * blocks_per_column(g_) * g_.f * kTileRows + kMaxPairs * g_.f * kPair;
}

void DirectConv::grad_input_avx512(const float* dy, const float* w, float* dx, float* scratch) const {
  const int64_t column = g_.c * g_.kh, per_column = blocks_per_column(g_);
  float* dyp = scratch + g_.kw * per_column * g_.f * kTileRows;
  const auto pairs = static_cast<int64_t>(halves_.size() / 2);
  // The first block of a column tap is its largest, and max_pairs falls with the rows.
  const int64_t per_tile = max_pairs(static_cast<int>(direct::block_of(column, kTileRows, 0).size));
  repack_weights(g_, w, scratch);
  std::fill(dx, dx + g_.n * g_.image(), 0.0f);
  for (int64_t n = 0; n < g_.n; ++n) {
    for (int64_t k = 0; k < pairs; k += per_tile) {  // a group of pairs stays in L1 for every block
      const int64_t v = std::min(per_tile, pairs - k);
      PairArgs t{{}, 0, dx + n * g_.image(), g_.f, halves_.data() + 2 * k};
      point_pairs(g_, v, dy + n * g_.out_image(), dyp, t);
      for (int64_t j = 0; j < g_.kw; ++j) {
        direct::for_each_block(column, kTileRows, [&](int64_t b, const Block& rb) {
          const float* wp = scratch + (j * per_column + b) * g_.f * kTileRows;
          tile_fn(rb.size, v)(t, wp, column_rows_.data() + j * column + rb.start);
        });
      }
    }
  }
}

}  // namespace plexus::ops
