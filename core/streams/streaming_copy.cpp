#include "core/streams/streaming_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace plexus::streams {

void streaming_copy(std::byte* dst, const std::byte* src, size_t bytes) {
  if (bytes == 0) return;  // an empty tensor's buffers may be null, which memcpy may not see
#if defined(__SSE2__)
  if (bytes >= kStreamingCopyMinBytes) {
    constexpr size_t kVector = 16, kBlock = 4 * kVector;
    const size_t head = (kVector - reinterpret_cast<uintptr_t>(dst) % kVector) % kVector;  // until dst is aligned
    std::memcpy(dst, src, head);
    size_t i = head;
    for (; i + kBlock <= bytes; i += kBlock) {
      const auto* s = reinterpret_cast<const __m128i*>(src + i);
      auto* d = reinterpret_cast<__m128i*>(dst + i);
      const __m128i a = _mm_loadu_si128(s), b = _mm_loadu_si128(s + 1), c = _mm_loadu_si128(s + 2), e = _mm_loadu_si128(s + 3);
      _mm_stream_si128(d, a);
      _mm_stream_si128(d + 1, b);
      _mm_stream_si128(d + 2, c);
      _mm_stream_si128(d + 3, e);
    }
    _mm_sfence();
    std::memcpy(dst + i, src + i, bytes - i);
    return;
  }
#endif
  std::memcpy(dst, src, bytes);
}

}  // namespace plexus::streams
