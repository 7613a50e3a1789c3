#include "core/checkpoint/header.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/ir/error.h"
#include "tests/checkpoint/checkpoint_test_util.h"

namespace plexus::checkpoint {
namespace {

using ::testing::HasSubstr;
using test_util::get_le;
using test_util::put_le;

const std::string kManifest = R"({"tensors":[]})";

Header sample_header() {
  Header h;
  h.manifest_bytes = kManifest.size();
  h.data_begin = kHeaderBytes + kManifest.size();
  h.file_size = h.data_begin + 1000;
  return h;
}

std::vector<std::byte> encoded(const Header& h, const std::string& manifest = kManifest) {
  const auto a = encode_header(h, manifest);
  return {a.begin(), a.end()};
}

// The error decode_header throws for `bytes`, or a failure when it throws none.
ir::Error decode_error(const std::vector<std::byte>& bytes, uint64_t actual_size) {
  try {
    decode_header(bytes.data(), actual_size, "checkpoint 'x.ckpt'");
  } catch (const ir::Error& e) {
    return e;
  }
  ADD_FAILURE() << "decode_header accepted the header";
  return ir::Error(ir::ErrorCode::Internal, "");
}

TEST(Header, LayoutIsLittleEndianWithChecksumOverHeaderAndManifest) {
  const Header h = sample_header();
  const std::vector<std::byte> b = encoded(h);
  ASSERT_EQ(b.size(), 64u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.data()), 8), "PLEXUSCK");
  EXPECT_EQ(get_le<uint32_t>(b, 8), 1u);
  EXPECT_EQ(get_le<uint32_t>(b, 12), 64u);
  EXPECT_EQ(get_le<uint64_t>(b, 16), 14u);
  EXPECT_EQ(get_le<uint64_t>(b, 24), 78u);
  EXPECT_EQ(get_le<uint64_t>(b, 32), 1078u);
  // Byte order spelled out once: version 1 is 01 00 00 00.
  EXPECT_EQ(b[8], std::byte{1});
  EXPECT_EQ(b[11], std::byte{0});
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(b.data()), 40);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(kManifest.data()), static_cast<uInt>(kManifest.size()));
  EXPECT_EQ(get_le<uint32_t>(b, 40), static_cast<uint32_t>(crc));
  for (size_t i = 44; i < 64; ++i) EXPECT_EQ(b[i], std::byte{0}) << "byte " << i;
}

TEST(Header, DecodeReturnsTheEncodedFields) {
  const Header h = sample_header();
  const std::vector<std::byte> b = encoded(h);
  const Header d = decode_header(b.data(), h.file_size, "checkpoint 'x.ckpt'");
  EXPECT_EQ(d.version, 1u);
  EXPECT_EQ(d.manifest_bytes, 14u);
  EXPECT_EQ(d.data_begin, 78u);
  EXPECT_EQ(d.file_size, 1078u);
  EXPECT_EQ(d.crc32, get_le<uint32_t>(b, 40));
  EXPECT_NO_THROW(verify_header_crc(b.data(), kManifest, "checkpoint 'x.ckpt'"));
}

TEST(Header, AFileOfOnlyHeaderAndEmptyManifestDecodes) {
  Header h;
  h.data_begin = 64;
  h.file_size = 64;
  const std::vector<std::byte> b = encoded(h, "");
  const Header d = decode_header(b.data(), 64, "f");
  EXPECT_EQ(d.manifest_bytes, 0u);
  EXPECT_NO_THROW(verify_header_crc(b.data(), "", "f"));
}

TEST(Header, ChecksumCoversTheManifest) {
  const std::vector<std::byte> b = encoded(sample_header());
  std::string changed = kManifest;
  changed[3] = 'T';
  try {
    verify_header_crc(b.data(), changed, "checkpoint 'x.ckpt'");
    FAIL() << "a changed manifest passed the checksum";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::BadFormat);
    EXPECT_STREQ(e.what(),
                 "checkpoint 'x.ckpt': the header and manifest checksum does not match (the header or the manifest is "
                 "damaged)");
  }
}

TEST(Header, ChecksumCoversEveryByteOfTheFirstForty) {
  const std::vector<std::byte> good = encoded(sample_header());
  for (size_t i = 0; i < 40; ++i) {
    std::vector<std::byte> b = good;
    b[i] ^= std::byte{0x10};
    EXPECT_THROW(verify_header_crc(b.data(), kManifest, "f"), ir::Error) << "byte " << i;
  }
  std::vector<std::byte> b = good;
  b[41] ^= std::byte{0x01};  // the stored checksum itself
  EXPECT_THROW(verify_header_crc(b.data(), kManifest, "f"), ir::Error);
}

TEST(Header, WrongMagicIsRefused) {
  std::vector<std::byte> b = encoded(sample_header());
  std::memcpy(b.data(), "PLEXUSCX", 8);
  const ir::Error e = decode_error(b, 1078);
  EXPECT_EQ(e.code(), ir::ErrorCode::BadFormat);
  EXPECT_STREQ(e.what(), "checkpoint 'x.ckpt': not a Plexus checkpoint (wrong magic number)");
}

TEST(Header, OtherVersionsAreRefusedNamingBoth) {
  Header h = sample_header();
  h.version = 2;
  EXPECT_STREQ(decode_error(encoded(h), 1078).what(),
               "checkpoint 'x.ckpt': checkpoint format version 2; this build reads version 1");
  h.version = 0;
  EXPECT_STREQ(decode_error(encoded(h), 1078).what(),
               "checkpoint 'x.ckpt': checkpoint format version 0; this build reads version 1");
}

TEST(Header, WrongHeaderSizeIsRefused) {
  std::vector<std::byte> b = encoded(sample_header());
  put_le<uint32_t>(b, 12, 128);
  EXPECT_STREQ(decode_error(b, 1078).what(), "checkpoint 'x.ckpt': header size 128, expected 64");
}

TEST(Header, NonZeroReservedBytesAreRefused) {
  for (size_t i = 44; i < 64; ++i) {
    std::vector<std::byte> b = encoded(sample_header());
    b[i] = std::byte{0x80};
    const ir::Error e = decode_error(b, 1078);
    EXPECT_EQ(e.code(), ir::ErrorCode::BadFormat);
    EXPECT_STREQ(e.what(), "checkpoint 'x.ckpt': reserved header bytes are not zero (header damaged)") << "byte " << i;
  }
}

TEST(Header, FileSizeMismatchSaysTruncatedOrTrailing) {
  const std::vector<std::byte> b = encoded(sample_header());
  EXPECT_STREQ(decode_error(b, 1077).what(),
               "checkpoint 'x.ckpt': the header records 1078 bytes but the file has 1077 (truncated)");
  EXPECT_STREQ(decode_error(b, 64).what(), "checkpoint 'x.ckpt': the header records 1078 bytes but the file has 64 (truncated)");
  EXPECT_STREQ(decode_error(b, 2000).what(),
               "checkpoint 'x.ckpt': the header records 1078 bytes but the file has 2000 (trailing bytes)");
}

TEST(Header, InconsistentSizesAreRefused) {
  Header h = sample_header();
  h.data_begin = 77;  // not 64 + manifest
  EXPECT_STREQ(decode_error(encoded(h), 1078).what(),
               "checkpoint 'x.ckpt': inconsistent header: manifest 14 bytes, data at 77, file 1078 bytes");

  h = sample_header();
  h.manifest_bytes = 5000;  // larger than the file
  h.data_begin = 5064;
  EXPECT_STREQ(decode_error(encoded(h), 1078).what(),
               "checkpoint 'x.ckpt': inconsistent header: manifest 5000 bytes, data at 5064, file 1078 bytes");

  h = sample_header();
  h.manifest_bytes = 1050;  // fits in the file, but the data would start past its end
  h.data_begin = 1114;
  EXPECT_STREQ(decode_error(encoded(h), 1078).what(),
               "checkpoint 'x.ckpt': inconsistent header: manifest 1050 bytes, data at 1114, file 1078 bytes");

  h = sample_header();
  h.manifest_bytes = ~uint64_t{0} - 63;  // 64 + manifest wraps to 0
  h.data_begin = 0;
  EXPECT_THAT(decode_error(encoded(h), 1078).what(), HasSubstr("inconsistent header: manifest 18446744073709551552 bytes"));
}

}  // namespace
}  // namespace plexus::checkpoint
