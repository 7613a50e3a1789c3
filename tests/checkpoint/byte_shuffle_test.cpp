#include "core/checkpoint/byte_shuffle.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <tuple>
#include <vector>

namespace plexus::checkpoint {
namespace {

std::vector<std::byte> iota_bytes(size_t n) {
  std::vector<std::byte> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>((i * 37 + i / 251) & 0xff);
  return out;
}

std::vector<int> as_ints(const std::vector<std::byte>& b) {
  std::vector<int> out;
  for (std::byte x : b) out.push_back(std::to_integer<int>(x));
  return out;
}

TEST(ByteShuffle, GroupsByteKOfEveryFourByteElement) {
  // Three 4-byte elements {0,1,2,3}, {4,5,6,7}, {8,9,10,11}: all first bytes, then all
  // second bytes, ...
  std::vector<std::byte> src(12), dst(12);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i);
  byte_shuffle(src.data(), dst.data(), src.size(), 4);
  EXPECT_EQ(as_ints(dst), (std::vector<int>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));

  std::vector<std::byte> back(12);
  byte_unshuffle(dst.data(), back.data(), dst.size(), 4);
  EXPECT_EQ(back, src);
}

TEST(ByteShuffle, TwoByteElements) {
  std::vector<std::byte> src(6), dst(6);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(10 + i);
  byte_shuffle(src.data(), dst.data(), src.size(), 2);
  EXPECT_EQ(as_ints(dst), (std::vector<int>{10, 12, 14, 11, 13, 15}));
}

TEST(ByteShuffle, OneByteElementsAreCopied) {
  const std::vector<std::byte> src = iota_bytes(1000);
  std::vector<std::byte> dst(src.size()), back(src.size());
  byte_shuffle(src.data(), dst.data(), src.size(), 1);
  EXPECT_EQ(dst, src);
  byte_unshuffle(dst.data(), back.data(), dst.size(), 1);
  EXPECT_EQ(back, src);
}

TEST(ByteShuffle, FloatSignAndExponentBytesEndUpTogether) {
  // 1.0f, 2.0f, 4.0f little-endian: 0x3f800000, 0x40000000, 0x40800000; the shuffled
  // stream holds the three low bytes, ..., then the three high (sign/exponent) bytes.
  const float v[3] = {1.0f, 2.0f, 4.0f};
  std::vector<std::byte> src(12), dst(12);
  std::memcpy(src.data(), v, sizeof v);
  byte_shuffle(src.data(), dst.data(), src.size(), 4);
  EXPECT_EQ(as_ints(dst), (std::vector<int>{0, 0, 0, 0, 0, 0, 0x80, 0x00, 0x80, 0x3f, 0x40, 0x40}));
}

// Round trips over sizes that cross the 4096-element blocks of the transpose, and one that
// is a block multiple.
class ByteShuffleRoundTrip : public ::testing::TestWithParam<std::tuple<size_t, size_t>> {};

TEST_P(ByteShuffleRoundTrip, UnshuffleInvertsShuffle) {
  const auto [element_size, elements] = GetParam();
  const std::vector<std::byte> src = iota_bytes(element_size * elements);
  std::vector<std::byte> dst(src.size()), back(src.size());
  byte_shuffle(src.data(), dst.data(), src.size(), element_size);
  // Spot-check the layout far from the start: byte k of element i lands at k * n + i.
  const size_t i = elements - 1, k = element_size - 1;
  EXPECT_EQ(dst[k * elements + i], src[i * element_size + k]);
  if (element_size > 1 && elements > 1) {
    EXPECT_NE(dst, src);
  }
  byte_unshuffle(dst.data(), back.data(), dst.size(), element_size);
  EXPECT_EQ(back, src);
}

INSTANTIATE_TEST_SUITE_P(Sizes, ByteShuffleRoundTrip,
                         ::testing::Combine(::testing::Values<size_t>(1, 4),
                                            ::testing::Values<size_t>(1, 3, 4096, 4097, 10000)));

// Every byte against the definition, around the 16-element steps of the vectorised
// 4-byte path (and its scalar tail) and for the scalar element sizes.
class ByteShuffleLayout : public ::testing::TestWithParam<std::tuple<size_t, size_t>> {};

TEST_P(ByteShuffleLayout, EveryByteLandsAtKTimesNPlusI) {
  const auto [element_size, elements] = GetParam();
  const std::vector<std::byte> src = iota_bytes(element_size * elements);
  std::vector<std::byte> dst(src.size()), back(src.size());
  byte_shuffle(src.data(), dst.data(), src.size(), element_size);
  size_t wrong = 0;
  for (size_t i = 0; i < elements; ++i) {
    for (size_t k = 0; k < element_size; ++k) wrong += dst[k * elements + i] != src[i * element_size + k];
  }
  EXPECT_EQ(wrong, 0u);
  byte_unshuffle(dst.data(), back.data(), dst.size(), element_size);
  EXPECT_EQ(back, src);
}

INSTANTIATE_TEST_SUITE_P(Sizes, ByteShuffleLayout,
                         ::testing::Combine(::testing::Values<size_t>(2, 4, 8),
                                            ::testing::Values<size_t>(15, 16, 17, 31, 48, 4111)));

TEST(ByteShuffle, EmptyBufferIsFine) {
  std::byte src[1] = {std::byte{7}}, dst[1] = {std::byte{9}};
  byte_shuffle(src, dst, 0, 4);
  byte_unshuffle(src, dst, 0, 4);
  EXPECT_EQ(dst[0], std::byte{9});
}

}  // namespace
}  // namespace plexus::checkpoint
