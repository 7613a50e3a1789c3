// DirectConv::grad_weight on AVX-512 CPUs (conv_direct.h): dw[f, tap] = sum over images and
// output pixels of dy[n, f, pixel] * x[n, tap window of pixel], as the AVX2 kernel
// (conv_direct_grad_weight.cpp) but with 16-lane registers: each holds a pair of 8-pixel
// vectors (halves_), dy's and x's read as two k-masked halves, or one k-masked 16-float
// read where every pair is 16 consecutive floats of dy (of a row of x) (0 in the lanes
// past the pair's pixels, so those add nothing). Tiles of up to 4 filters x 6 taps keep 16 lane sums
// per weight, in scratch between chunks of images; dw is their sum in a fixed tree.
#include <algorithm>

#include "core/ops/conv/conv_direct.h"
#include "core/ops/conv/conv_direct_simd.h"

namespace plexus::ops {

namespace {

using direct::Block;
using direct::kLanes;
using direct::kPair;
using direct::lane_mask;

constexpr int64_t kTileFilters = 4;  // filters per register tile at most
constexpr int64_t kTileTaps = 6;     // taps per register tile at most

/// What the tiles of one chunk of images share: x and dy at its first image, the images,
/// floats per image of each, y's filter-plane stride P, K, the tap offsets and the halves
/// (2 per pair).
struct WeightArgs {
  const float* x;
  const float* dy;
  int64_t images, image, out_image, plane, k;
  const int64_t* offsets;
  const LanedVector* halves;
  int64_t pairs;
};

/// base[lo.at .. ) in lanes [0, lo.lanes), base[hi.at .. ) in lanes [8, 8 + hi.lanes), 0 in
/// the others; `at` is x or y as Y says. Joined: hi follows a full lo (hi.at = lo.at + 8, or
/// hi is the 0-lane padding), so one k-masked read of 16 floats does.
template <bool Y, bool Joined>
PLEXUS_AVX512 inline __m512 load_pair(const float* base, const LanedVector& lo, const LanedVector& hi) {
  if constexpr (Joined) return _mm512_maskz_loadu_ps(direct::pair_mask(hi.lanes), base + (Y ? lo.y : lo.x));
  const __m512 low = _mm512_maskz_loadu_ps(lane_mask(lo.lanes), base + (Y ? lo.y : lo.x));
  return _mm512_insertf32x8(low, _mm256_maskz_loadu_ps(lane_mask(hi.lanes), base + (Y ? hi.y : hi.x)), 1);
}

/// True when every pair of halves is Joined in x (X) or in y (!X), for load_pair.
bool all_joined(const std::vector<LanedVector>& halves, bool x) {
  for (size_t k = 0; k < halves.size(); k += 2) {
    const LanedVector &lo = halves[k], &hi = halves[k + 1];
    if (lo.lanes != kLanes || (hi.lanes != 0 && (x ? hi.x : hi.y) != (x ? lo.x : lo.y) + kLanes)) return false;
  }
  return true;
}

// Lane sums of dw [R filters from f0, L taps from l0], at sums[(f*K + tap)*16 + lane],
// += dy * x over the chunk's images and pairs, in that order.
template <int R, int L, bool JoinedX, bool JoinedY>
PLEXUS_AVX512 void tile(const WeightArgs& a, int64_t f0, int64_t l0, float* sums) {
  // Locals only inside the loops, and every loop over acc unrolled, so that the
  // accumulators stay in registers.
  const int64_t k = a.k, plane = a.plane, pairs = a.pairs;
  const LanedVector* h = a.halves;
  int64_t off[L];
  __m512 acc[R][L];
#pragma GCC unroll 8
  for (int l = 0; l < L; ++l) off[l] = a.offsets[l0 + l];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int l = 0; l < L; ++l) acc[r][l] = _mm512_loadu_ps(sums + ((f0 + r) * k + l0 + l) * kPair);
  }
  for (int64_t n = 0; n < a.images; ++n) {
    const float* xn = a.x + n * a.image;
    const float* dyn = a.dy + n * a.out_image + f0 * plane;
    for (int64_t p = 0; p < pairs; ++p) {
      const LanedVector lo = h[2 * p], hi = h[2 * p + 1];
      __m512 d[R];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) d[r] = load_pair<true, JoinedY>(dyn + r * plane, lo, hi);
#pragma GCC unroll 8
      for (int l = 0; l < L; ++l) {
        const __m512 xl = load_pair<false, JoinedX>(xn + off[l], lo, hi);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[r][l] = _mm512_fmadd_ps(d[r], xl, acc[r][l]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int l = 0; l < L; ++l) _mm512_storeu_ps(sums + ((f0 + r) * k + l0 + l) * kPair, acc[r][l]);
  }
}

using TileFn = void (*)(const WeightArgs&, int64_t, int64_t, float*);

/// The tile of R filters and L taps (each clamped to [1, its maximum]), its pairs all
/// Joined in x and / or y or not.
TileFn tile_fn(int64_t filters, int64_t taps, bool joined_x, bool joined_y) {
  return direct::dispatch<kTileFilters>(filters, [&]<int R>() {
    return direct::dispatch<kTileTaps>(taps, [&]<int L>() -> TileFn {
      if (joined_x) return joined_y ? tile<R, L, true, true> : tile<R, L, true, false>;
      return joined_y ? tile<R, L, false, true> : tile<R, L, false, false>;
    });
  });
}

/// The sum of 16 lane sums in a fixed tree.
float sum_lanes(const float* s) {
  float half[kLanes];
  for (int64_t l = 0; l < kLanes; ++l) half[l] = s[l] + s[l + kLanes];
  return ((half[0] + half[1]) + (half[2] + half[3])) + ((half[4] + half[5]) + (half[6] + half[7]));
}

}  // namespace

int64_t DirectConv::grad_weight_avx512_scratch_floats() const { return g_.f * g_.k() * kPair; }

void DirectConv::grad_weight_avx512_add(const float* x, const float* dy, int64_t images, float* sums) const {
  const int64_t k = g_.k();
  const bool joined_x = all_joined(halves_, true), joined_y = all_joined(halves_, false);
  const WeightArgs a{x, dy, images, g_.image(), g_.out_image(), g_.p(), k, offsets_.data(), halves_.data(),
                     static_cast<int64_t>(halves_.size() / 2)};
  direct::for_each_block(g_.f, kTileFilters, [&](int64_t, const Block& fb) {
    direct::for_each_block(k, kTileTaps, [&](int64_t, const Block& lb) {
      tile_fn(fb.size, lb.size, joined_x, joined_y)(a, fb.start, lb.start, sums);
    });
  });
}

void DirectConv::grad_weight_avx512_end(float* dw, const float* sums) const {
  for (int64_t e = 0; e < g_.f * g_.k(); ++e) dw[e] = sum_lanes(sums + e * kPair);
}

}  // namespace plexus::ops
