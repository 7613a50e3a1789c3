#include "core/streams/streaming_copy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace plexus::streams {
namespace {

// Every byte arrives, whatever the alignment of either side and the size's remainder,
// below and above the size where streaming stores take over; nothing around the
// destination is touched.
TEST(StreamingCopy, NothingToCopyAcceptsNullBuffers) {
  // An empty tensor's host array and device buffer may both be null (UBSan checks memcpy's).
  streaming_copy(nullptr, nullptr, 0);
  std::byte dst{0x5A};
  streaming_copy(&dst, nullptr, 0);
  EXPECT_EQ(dst, std::byte{0x5A});
}

TEST(StreamingCopy, CopiesEveryByteAtAnyAlignmentAndSize) {
  const size_t big = kStreamingCopyMinBytes + 77;
  std::vector<std::byte> src(big + 64), dst(big + 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>((i * 131 + 7) % 251);
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{63}, size_t{4096}, kStreamingCopyMinBytes, big}) {
    for (size_t src_offset : {0, 3}) {
      for (size_t dst_offset : {0, 5, 16}) {
        std::fill(dst.begin(), dst.end(), std::byte{0xEE});
        streaming_copy(dst.data() + dst_offset, src.data() + src_offset, bytes);
        size_t wrong = 0;
        for (size_t i = 0; i < bytes; ++i) wrong += dst[dst_offset + i] != src[src_offset + i];
        EXPECT_EQ(wrong, 0u) << bytes << " bytes, src+" << src_offset << ", dst+" << dst_offset;
        for (size_t i = 0; i < dst_offset; ++i) ASSERT_EQ(dst[i], std::byte{0xEE});
        for (size_t i = dst_offset + bytes; i < dst.size(); ++i) ASSERT_EQ(dst[i], std::byte{0xEE});
      }
    }
  }
}

}  // namespace
}  // namespace plexus::streams
