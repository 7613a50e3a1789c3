// DirectConv::grad_weight (conv_direct.h): dw[f, tap] = sum over images and output pixels of
// dy[n, f, pixel] * x[n, tap window of pixel], as 8-lane partial sums in registers.
#include <algorithm>

#include "core/ops/conv/conv_direct.h"
#include "core/ops/conv/conv_direct_simd.h"

namespace plexus::ops {

namespace {

using direct::Block;
using direct::kLanes;

constexpr int64_t kTileFilters = 3;  // filters per register tile
constexpr int64_t kTileTaps = 4;     // taps per register tile
constexpr int64_t kMinPixels = 512;  // output pixels per chunk of images at least

/// What the tiles of one chunk of images share: x and dy at its first image, floats per
/// image of each, y's filter-plane stride P, the tap offsets, the pixel vectors (all
/// masked to mask_lanes when a tile is Masked), and K.
struct GradArgs {
  const float* x;
  const float* dy;
  int64_t images, image, out_image, plane;
  const int64_t* offsets;
  const PixelVector* vectors;
  int64_t count;
  const int32_t* mask_lanes;
  int64_t k;
};

// Lane sums of dw [R filters from f0, L taps from l0], at sums[(f*K + tap)*kLanes + lane],
// += dy * x over the chunk's images and pixel vectors, in that order.
template <int R, int L, bool Masked>
PLEXUS_AVX2 void tile(const GradArgs& a, int64_t f0, int64_t l0, float* sums) {
  // Locals only inside the loops, and every loop over acc unrolled, so that the
  // accumulators stay in registers.
  const __m256i mask = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.mask_lanes));
  const int64_t k = a.k, plane = a.plane, count = a.count;
  const PixelVector* vectors = a.vectors;
  int64_t off[L];
  __m256 acc[R][L];
#pragma GCC unroll 4
  for (int l = 0; l < L; ++l) off[l] = a.offsets[l0 + l];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int l = 0; l < L; ++l) acc[r][l] = _mm256_loadu_ps(sums + ((f0 + r) * k + l0 + l) * kLanes);
  }
  for (int64_t n = 0; n < a.images; ++n) {
    const float* xn = a.x + n * a.image;
    const float* dyn = a.dy + n * a.out_image + f0 * plane;
    for (int64_t i = 0; i < count; ++i) {
      const PixelVector v = vectors[i];
      __m256 d[R];
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) d[r] = direct::load<Masked>(dyn + r * plane + v.y, mask);
#pragma GCC unroll 4
      for (int l = 0; l < L; ++l) {
        const __m256 xl = direct::load<Masked>(xn + v.x + off[l], mask);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) acc[r][l] = _mm256_fmadd_ps(d[r], xl, acc[r][l]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int l = 0; l < L; ++l) _mm256_storeu_ps(sums + ((f0 + r) * k + l0 + l) * kLanes, acc[r][l]);
  }
}

using TileFn = void (*)(const GradArgs&, int64_t, int64_t, float*);

template <int R, int L>
constexpr TileFn pick(bool masked) {
  return masked ? tile<R, L, true> : tile<R, L, false>;
}

TileFn tile_fn(int64_t filters, int64_t taps, bool masked) {
  return direct::dispatch<kTileFilters>(filters, [&]<int R>() {
    return direct::dispatch<kTileTaps>(taps, [&]<int L>() { return pick<R, L>(masked); });
  });
}

// Every (filter block, tap block) tile over the chunk's images and the given pixel vectors.
void pass(const ConvGeometry& g, GradArgs a, const std::vector<PixelVector>& vectors, int64_t lanes, float* sums) {
  a.vectors = vectors.data();
  a.count = static_cast<int64_t>(vectors.size());
  a.mask_lanes = direct::mask_lanes(lanes);
  for (int64_t fi = 0; fi < direct::block_count(g.f, kTileFilters); ++fi) {
    const Block fb = direct::block_of(g.f, kTileFilters, fi);
    for (int64_t li = 0; li < direct::block_count(g.k(), kTileTaps); ++li) {
      const Block lb = direct::block_of(g.k(), kTileTaps, li);
      tile_fn(fb.size, lb.size, lanes < kLanes)(a, fb.start, lb.start, sums);
    }
  }
}

}  // namespace

int64_t DirectConv::grad_weight_scratch_floats() const {
  return isa_ == DirectIsa::Avx512 ? grad_weight_avx512_scratch_floats() : g_.f * g_.k() * kLanes;
}

int64_t DirectConv::grad_weight_images() const {
  return std::clamp<int64_t>((kMinPixels + g_.p() - 1) / g_.p(), 1, g_.n);
}

void DirectConv::grad_weight(const float* x, const float* dy, float* dw, float* scratch) const {
  for (int64_t n0 = 0; n0 < g_.n; n0 += grad_weight_images()) {
    grad_weight_add(x + n0 * g_.image(), dy + n0 * g_.out_image(), n0, std::min(grad_weight_images(), g_.n - n0),
                    scratch);
  }
  grad_weight_end(dw, scratch);
}

void DirectConv::grad_weight_add(const float* x, const float* dy, int64_t n0, int64_t images, float* sums) const {
  if (n0 == 0) std::fill(sums, sums + grad_weight_scratch_floats(), 0.0f);
  if (isa_ == DirectIsa::Avx512) {
    grad_weight_avx512_add(x, dy, images, sums);
    return;
  }
  const GradArgs a{x, dy, images, g_.image(), g_.out_image(), g_.p(), offsets_.data(), nullptr, 0, nullptr, g_.k()};
  pass(g_, a, full_, kLanes, sums);
  if (!tail_.empty()) pass(g_, a, tail_, g_.ow % kLanes, sums);
}

void DirectConv::grad_weight_end(float* dw, const float* sums) const {
  if (isa_ == DirectIsa::Avx512) {
    grad_weight_avx512_end(dw, sums);
    return;
  }
  for (int64_t e = 0; e < g_.f * g_.k(); ++e) {  // the 8 lanes in a fixed tree
    const float* s = sums + e * kLanes;
    dw[e] = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  }
}

}  // namespace plexus::ops
