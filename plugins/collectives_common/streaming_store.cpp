#include "collectives_common/streaming_store.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace plexus::collectives {

bool use_streaming(size_t bytes) { return bytes >= kStreamingThresholdBytes; }

#if defined(__SSE2__)

void copy_streaming(void* dst, const void* src, size_t bytes) noexcept {
  auto* out = static_cast<std::byte*>(dst);
  const auto* in = static_cast<const std::byte*>(src);
  // Head: plain copy up to the first 16-byte-aligned destination address.
  const size_t head = std::min(bytes, (16 - reinterpret_cast<uintptr_t>(out) % 16) % 16);
  std::memcpy(out, in, head);
  out += head;
  in += head;
  bytes -= head;
  // Body: 64 bytes (a cache line) per step, aligned streaming stores.
  for (; bytes >= 64; bytes -= 64, in += 64, out += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(out), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + 48), d);
  }
  std::memcpy(out, in, bytes);  // tail
}

void streaming_fence() noexcept { _mm_sfence(); }

#else

void copy_streaming(void* dst, const void* src, size_t bytes) noexcept {
  std::memcpy(dst, src, bytes);
}

void streaming_fence() noexcept {}

#endif

}  // namespace plexus::collectives
