// max_pool2d 2x2 tiles on AVX-512 (max_pool_avx512.h). A step takes 16 windows: the two
// input rows' 32 floats each (two vectors, masked past the row's end), split into even and
// odd columns, which are the windows' positions 0 and 1 (top row) and 2 and 3 (bottom row);
// the scan of pooling.cpp's window_max then runs on whole vectors, its take masks giving
// the argmax, and the gradient's four positions are interleaved back into the two rows.
#include "core/ops/pool/max_pool_avx512.h"

#include <immintrin.h>

#include <cstdlib>
#include <cstring>

#include "core/ops/elementwise/relu.h"

#define PLEXUS_AVX512F __attribute__((target("avx512f")))

namespace plexus::ops {

namespace {

constexpr int64_t kWindows = 16;  // windows per vector step

// Lane tables for permute(): the even or odd lanes of 32 floats, and the first or last 16
// floats of two vectors interleaved (a0 b0 a1 b1 ...).
constexpr int32_t kEven[16] = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30};
constexpr int32_t kOdd[16] = {1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31};
constexpr int32_t kInterleaveLow[16] = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23};
constexpr int32_t kInterleaveHigh[16] = {8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};

/// Lane i of the result is lane lanes[i] of the 32 floats a:b.
PLEXUS_AVX512F inline __m512 permute(__m512 a, __m512 b, const int32_t (&lanes)[16]) {
  return _mm512_permutex2var_ps(a, _mm512_loadu_si512(lanes), b);
}

/// The lanes of n windows (n <= 16): their outputs, and the 2n floats of an input row.
struct StepMasks {
  __mmask16 out, lo, hi;
  explicit StepMasks(int64_t n)
      : out(static_cast<__mmask16>((1u << n) - 1u)),
        lo(static_cast<__mmask16>(n >= 8 ? 0xFFFFu : (1u << (2 * n)) - 1u)),
        hi(static_cast<__mmask16>(n <= 8 ? 0u : (1u << (2 * n - 16)) - 1u)) {}
};

/// The windows' four positions, in row-major window order.
struct Windows {
  __m512 v[4];
};

PLEXUS_AVX512F inline Windows load_windows(const float* top, int64_t w, const StepMasks& m) {
  const __m512 t0 = _mm512_maskz_loadu_ps(m.lo, top), t1 = _mm512_maskz_loadu_ps(m.hi, top + kWindows);
  const __m512 b0 = _mm512_maskz_loadu_ps(m.lo, top + w), b1 = _mm512_maskz_loadu_ps(m.hi, top + w + kWindows);
  return {{permute(t0, t1, kEven), permute(t0, t1, kOdd), permute(b0, b1, kEven), permute(b0, b1, kOdd)}};
}

/// Whether v takes over from best: greater, or NaN (pooling.cpp's `replaces`).
PLEXUS_AVX512F inline __mmask16 replaces(__m512 v, __m512 best) {
  return _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
}

/// The windows' maxima, and (into take) the mask of the windows where position i took over.
PLEXUS_AVX512F inline __m512 scan(const Windows& x, __mmask16 take[4]) {
  __m512 best = x.v[0];
  take[0] = 0;
  for (int i = 1; i < 4; ++i) {
    take[i] = replaces(x.v[i], best);
    best = _mm512_mask_mov_ps(best, take[i], x.v[i]);
  }
  return best;
}

}  // namespace

bool max_pool_avx512_available() {
  static const bool cpu = __builtin_cpu_supports("avx512f");
  const char* isa = std::getenv("PLEXUS_POOL_ISA");
  return cpu && (isa == nullptr || std::strcmp(isa, "baseline") != 0);
}

PLEXUS_AVX512F void max_pool2x2_row_avx512(const float* top, int64_t w, int64_t ow, float* y, bool relu) {
  for (int64_t c = 0; c < ow; c += kWindows) {
    const StepMasks m(ow - c < kWindows ? ow - c : kWindows);
    __mmask16 take[4];
    __m512 best = scan(load_windows(top + 2 * c, w, m), take);
    if (relu) best = relu_lanes(best);
    _mm512_mask_storeu_ps(y + c, m.out, best);
  }
}

PLEXUS_AVX512F void max_pool2x2_grad_row_avx512(const float* top, int64_t w, int64_t ow, const float* dy,
                                                float* dx_top, bool relu_folded) {
  for (int64_t c = 0; c < ow; c += kWindows) {
    const StepMasks m(ow - c < kWindows ? ow - c : kWindows);
    __mmask16 take[4];
    const __m512 best = scan(load_windows(top + 2 * c, w, m), take);
    // 0 + dy as the portable path's, so a -0 dy lands as +0.
    __m512 g = _mm512_add_ps(_mm512_setzero_ps(), _mm512_maskz_loadu_ps(m.out, dy + c));
    if (relu_folded) g = _mm512_maskz_mov_ps(relu_active_lanes(best), g);
    // The argmax is the last position that took over, else position 0.
    const __mmask16 at[4] = {static_cast<__mmask16>(~(take[1] | take[2] | take[3])),
                             static_cast<__mmask16>(take[1] & ~(take[2] | take[3])),
                             static_cast<__mmask16>(take[2] & ~take[3]), take[3]};
    __m512 d[4];
    for (int i = 0; i < 4; ++i) d[i] = _mm512_maskz_mov_ps(at[i], g);
    float* row = dx_top + 2 * c;
    _mm512_mask_storeu_ps(row, m.lo, permute(d[0], d[1], kInterleaveLow));
    _mm512_mask_storeu_ps(row + kWindows, m.hi, permute(d[0], d[1], kInterleaveHigh));
    _mm512_mask_storeu_ps(row + w, m.lo, permute(d[2], d[3], kInterleaveLow));
    _mm512_mask_storeu_ps(row + w + kWindows, m.hi, permute(d[2], d[3], kInterleaveHigh));
  }
}

}  // namespace plexus::ops
