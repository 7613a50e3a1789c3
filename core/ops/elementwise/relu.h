// relu, written once for the relu op, its gradient, and every kernel that fuses it: the
// relu epilogues of conv2d and max_pool2d (core/compile/relu_fusion.h) and the relu
// gradients folded into max_pool2d_grad. A fused program gives the unfused program's bits
// only because all of them compute relu the same way:
//   relu(x) = x > 0 ? x : +0   (negative values, -0 and NaN give +0)
//   relu passes the gradient exactly where x > 0 (equivalently where relu(x) > 0).
#pragma once

#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace plexus::ops {

/// True where relu passes its input (and its gradient) on: x > 0; false for NaN. Pure.
inline bool relu_active(float x) { return x > 0.0f; }

/// relu of one float32: x > 0 ? x : +0. Pure.
inline float relu(float x) { return relu_active(x) ? x : 0.0f; }

/// y[i] = relu(y[i]) for i in [0, n): an epilogue over a block a kernel has just written
/// (still in cache). y has n floats; not thread-safe on the same y.
inline void relu_in_place(float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = relu(y[i]);
}

#if defined(__x86_64__)
/// relu_active() of 16 float32 lanes; for code compiled for AVX-512 F only.
__attribute__((target("avx512f"))) inline __mmask16 relu_active_lanes(__m512 v) {
  return _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ);
}

/// relu() of 16 float32 lanes; for code compiled for AVX-512 F only.
__attribute__((target("avx512f"))) inline __m512 relu_lanes(__m512 v) {
  return _mm512_maskz_mov_ps(relu_active_lanes(v), v);
}
#endif

}  // namespace plexus::ops
