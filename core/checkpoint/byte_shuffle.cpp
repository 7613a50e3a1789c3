#include "core/checkpoint/byte_shuffle.h"

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace plexus::checkpoint {

namespace {

// Column k of an n x e byte matrix <-> row k of its transpose, for the elements from `first`
// on, in blocks that stay in L1.
template <bool Forward>
void transpose_bytes(const std::byte* src, std::byte* dst, size_t n, size_t e, size_t first) {
  constexpr size_t kBlock = 4096;
  for (size_t i0 = first; i0 < n; i0 += kBlock) {
    const size_t i1 = i0 + kBlock < n ? i0 + kBlock : n;
    for (size_t k = 0; k < e; ++k) {
      for (size_t i = i0; i < i1; ++i) {
        if constexpr (Forward) {
          dst[k * n + i] = src[i * e + k];
        } else {
          dst[i * e + k] = src[k * n + i];
        }
      }
    }
  }
}

#if defined(__x86_64__)
// 4-byte elements, 16 at a time (Blosc's shuffle-sse2 does the same with other steps): a
// byte shuffle gathers byte k of 4 elements into dword k of each vector, and a 4 x 4 dword
// transpose gathers dword k of the 4 vectors. Both steps are their own inverse, so
// unshuffling runs them in the opposite order. Returns the elements done.
template <bool Forward>
__attribute__((target("ssse3"))) size_t transpose4_ssse3(const std::byte* src, std::byte* dst, size_t n) {
  const __m128i gather = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  auto transpose_dwords = [](__m128i v[4]) {
    const __m128i t0 = _mm_unpacklo_epi32(v[0], v[1]), t1 = _mm_unpacklo_epi32(v[2], v[3]);
    const __m128i t2 = _mm_unpackhi_epi32(v[0], v[1]), t3 = _mm_unpackhi_epi32(v[2], v[3]);
    v[0] = _mm_unpacklo_epi64(t0, t1);
    v[1] = _mm_unpackhi_epi64(t0, t1);
    v[2] = _mm_unpacklo_epi64(t2, t3);
    v[3] = _mm_unpackhi_epi64(t2, t3);
  };
  const size_t whole = n - n % 16;
  for (size_t j = 0; j < whole; j += 16) {
    __m128i v[4];
    for (size_t k = 0; k < 4; ++k) {
      const std::byte* from = Forward ? src + 4 * j + 16 * k : src + k * n + j;
      v[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from));
      if constexpr (Forward) v[k] = _mm_shuffle_epi8(v[k], gather);
    }
    transpose_dwords(v);
    for (size_t k = 0; k < 4; ++k) {
      if constexpr (!Forward) v[k] = _mm_shuffle_epi8(v[k], gather);
      std::byte* to = Forward ? dst + k * n + j : dst + 4 * j + 16 * k;
      _mm_storeu_si128(reinterpret_cast<__m128i*>(to), v[k]);
    }
  }
  return whole;
}
#endif

template <bool Forward>
void shuffle(const std::byte* src, std::byte* dst, size_t bytes, size_t e) {
  if (e <= 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const size_t n = bytes / e;
  size_t done = 0;
#if defined(__x86_64__)
  static const bool ssse3 = __builtin_cpu_supports("ssse3");
  if (e == 4 && ssse3) done = transpose4_ssse3<Forward>(src, dst, n);
#endif
  transpose_bytes<Forward>(src, dst, n, e, done);
}

}  // namespace

void byte_shuffle(const std::byte* src, std::byte* dst, size_t bytes, size_t element_size) {
  shuffle<true>(src, dst, bytes, element_size);
}

void byte_unshuffle(const std::byte* src, std::byte* dst, size_t bytes, size_t element_size) {
  shuffle<false>(src, dst, bytes, element_size);
}

}  // namespace plexus::checkpoint
