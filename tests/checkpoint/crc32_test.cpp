#include "core/checkpoint/crc32.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <vector>

#include "tests/checkpoint/checkpoint_test_util.h"

namespace plexus::checkpoint {
namespace {

TEST(Crc32, IsTheIeeeCrcOfZlib) {
  EXPECT_EQ(crc32_of(test_util::to_bytes("123456789")), 0xcbf43926u);  // the CRC-32 check value
  EXPECT_EQ(crc32_of({}), 0u);
}

TEST(Crc32, EqualsZlibsOnEveryLengthAndAlignment) {
  // libdeflate's folding paths differ by length and alignment; zlib is the reference.
  std::vector<std::byte> data(4200);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>((i * 131 + 7) & 0xff);
  size_t wrong = 0;
  for (size_t offset : {0, 1, 3, 8}) {
    for (size_t length = 0; length + offset <= data.size(); length += length < 300 ? 1 : 97) {
      const std::span<const std::byte> s(data.data() + offset, length);
      const uLong zlib = crc32(0L, reinterpret_cast<const Bytef*>(s.data()), static_cast<uInt>(s.size()));
      wrong += crc32_of(s) != static_cast<uint32_t>(zlib);
    }
  }
  EXPECT_EQ(wrong, 0u);
}

TEST(Crc32, ContinuesFromAnEarlierCrc) {
  const std::vector<std::byte> ab = test_util::to_bytes("header and manifest");
  const std::span<const std::byte> a(ab.data(), 7), b(ab.data() + 7, ab.size() - 7);
  EXPECT_EQ(crc32_of(b, crc32_of(a)), crc32_of(ab));
}

}  // namespace
}  // namespace plexus::checkpoint
