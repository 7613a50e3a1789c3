#include "core/checkpoint/byte_shuffle.h"

#include <cstring>

namespace plexus::checkpoint {

namespace {

// Column k of an n x e byte matrix <-> row k of its transpose, in blocks that stay in L1.
template <bool Forward>
void transpose_bytes(const std::byte* src, std::byte* dst, size_t bytes, size_t e) {
  if (e <= 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const size_t n = bytes / e;
  constexpr size_t kBlock = 4096;
  for (size_t i0 = 0; i0 < n; i0 += kBlock) {
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

}  // namespace

void byte_shuffle(const std::byte* src, std::byte* dst, size_t bytes, size_t element_size) {
  transpose_bytes<true>(src, dst, bytes, element_size);
}

void byte_unshuffle(const std::byte* src, std::byte* dst, size_t bytes, size_t element_size) {
  transpose_bytes<false>(src, dst, bytes, element_size);
}

}  // namespace plexus::checkpoint
