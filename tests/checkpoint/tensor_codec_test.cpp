#include "core/checkpoint/tensor_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zstd.h>

#include <string>
#include <tuple>
#include <vector>

#include "core/checkpoint/byte_shuffle.h"
#include "core/checkpoint/crc32.h"
#include "core/ir/error.h"
#include "tests/checkpoint/checkpoint_test_util.h"

namespace plexus::checkpoint {
namespace {

using ::testing::HasSubstr;
using test_util::tensor_data;

// The error decode_tensor throws, or a failure when it throws none.
ir::Error decode_error(const TensorEntry& e, std::span<const std::byte> frame) {
  std::vector<std::byte> out(e.bytes());
  try {
    decode_tensor(e, frame, out, "checkpoint 'c.ckpt'");
  } catch (const ir::Error& err) {
    return err;
  }
  ADD_FAILURE() << "decode_tensor accepted the frame";
  return ir::Error(ir::ErrorCode::Internal, "");
}

// encode_tensor into a new buffer.
std::vector<std::byte> encoded(TensorEntry& e, const std::vector<std::byte>& data, int level) {
  std::vector<std::byte> frame;
  encode_tensor(e, data, level, frame);
  return frame;
}

TEST(TensorCodec, EncodeSetsSizeAndCrcAndWritesOneCheckedFrame) {
  TensorEntry e = TensorEntry::variable("w", ir::DType::Float32, {16, 9}, 2);
  const std::vector<std::byte> data = tensor_data(e, 1);
  const std::vector<std::byte> frame = encoded(e, data, 3);
  EXPECT_EQ(e.size, frame.size());
  EXPECT_EQ(e.crc32, crc32_of(data));
  EXPECT_EQ(ZSTD_findFrameCompressedSize(frame.data(), frame.size()), frame.size());
  EXPECT_EQ(ZSTD_getFrameContentSize(frame.data(), frame.size()), 1152u);
  // Byte 4 is the frame header descriptor; its bit 2 is Content_Checksum_flag (RFC 8878).
  EXPECT_EQ(std::to_integer<unsigned>(frame.at(4)) & 0x04u, 0x04u);
  // Unshuffled: the frame holds the plain bytes.
  std::vector<std::byte> plain(data.size());
  ASSERT_EQ(ZSTD_decompress(plain.data(), plain.size(), frame.data(), frame.size()), data.size());
  EXPECT_EQ(plain, data);
}

TEST(TensorCodec, ShuffledFrameHoldsTheShuffledBytesAndCrcOfThePlainOnes) {
  TensorEntry e = TensorEntry::variable("w", ir::DType::Float32, {100}, 1, true);
  const std::vector<std::byte> data = tensor_data(e, 2);
  const std::vector<std::byte> frame = encoded(e, data, 1);
  EXPECT_EQ(e.crc32, crc32_of(data));
  std::vector<std::byte> stored(data.size()), expected(data.size());
  ASSERT_EQ(ZSTD_decompress(stored.data(), stored.size(), frame.data(), frame.size()), data.size());
  byte_shuffle(data.data(), expected.data(), data.size(), 4);
  EXPECT_EQ(stored, expected);
}

TEST(TensorCodec, AReusedBufferAndThreadContextGiveTheFramesOfFreshOnes) {
  // One thread's zstd context is reset between tensors (level, checksum), and the caller's
  // buffer keeps a larger frame's capacity: neither may leak into the next frame.
  TensorEntry big = TensorEntry::variable("big", ir::DType::Float32, {64, 64}, 1, true);
  TensorEntry small = TensorEntry::variable("small", ir::DType::Float32, {5, 7}, 1, false);
  const std::vector<std::byte> big_data = tensor_data(big, 5), small_data = tensor_data(small, 6);
  TensorEntry fresh_small = small;
  const std::vector<std::byte> expected = encoded(fresh_small, small_data, 1);
  std::vector<std::byte> frame;
  encode_tensor(big, big_data, 19, frame);
  encode_tensor(small, small_data, 1, frame);
  EXPECT_EQ(frame, expected);
  EXPECT_EQ(small.size, frame.size());
  EXPECT_EQ(small.crc32, fresh_small.crc32);
}

class TensorCodecRoundTrip : public ::testing::TestWithParam<std::tuple<ir::DType, bool, int>> {};

TEST_P(TensorCodecRoundTrip, DecodeGivesBackTheBytes) {
  const auto [dtype, shuffle, level] = GetParam();
  TensorEntry e = TensorEntry::variable("t", dtype, {3, 5, 7}, 3, shuffle);
  const std::vector<std::byte> data = tensor_data(e, 3);
  const std::vector<std::byte> frame = encoded(e, data, level);
  std::vector<std::byte> out(e.bytes());
  decode_tensor(e, frame, out, "checkpoint 'c.ckpt'");
  EXPECT_EQ(out, data);
}

INSTANTIATE_TEST_SUITE_P(All, TensorCodecRoundTrip,
                         ::testing::Combine(::testing::Values(ir::DType::Float32, ir::DType::Int32, ir::DType::UInt8),
                                            ::testing::Bool(), ::testing::Values(1, 3, 19)),
                         [](const auto& info) {
                           return std::string(ir::dtype_name(std::get<0>(info.param))) +
                                  (std::get<1>(info.param) ? "Shuffled" : "Plain") + "Level" +
                                  std::to_string(std::get<2>(info.param));
                         });

class TensorCodecDamage : public ::testing::Test {
 protected:
  void SetUp() override {
    entry_ = TensorEntry::variable("layer1.w", ir::DType::Float32, {8, 8}, 1, true);
    data_ = tensor_data(entry_, 4);
    frame_ = encoded(entry_, data_, 3);
  }
  TensorEntry entry_;
  std::vector<std::byte> data_, frame_;
};

TEST_F(TensorCodecDamage, TrailingByteIsNotOneFrame) {
  std::vector<std::byte> f = frame_;
  f.push_back(std::byte{0});
  const ir::Error e = decode_error(entry_, f);
  EXPECT_EQ(e.code(), ir::ErrorCode::BadFormat);
  EXPECT_STREQ(e.what(), "checkpoint 'c.ckpt': tensor 'layer1.w': its data is not one complete zstd frame (damaged)");
}

TEST_F(TensorCodecDamage, TruncatedFrameIsNotOneFrame) {
  for (size_t cut : {size_t{0}, size_t{3}, frame_.size() / 2, frame_.size() - 1}) {
    const ir::Error e = decode_error(entry_, std::span(frame_).first(cut));
    EXPECT_EQ(e.code(), ir::ErrorCode::BadFormat);
    EXPECT_STREQ(e.what(), "checkpoint 'c.ckpt': tensor 'layer1.w': its data is not one complete zstd frame (damaged)")
        << "cut at " << cut;
  }
}

TEST_F(TensorCodecDamage, ContentSizeOtherThanTheManifestsIsRefused) {
  TensorEntry other = entry_;
  other.shape = {8, 9};
  const ir::Error e = decode_error(other, frame_);
  EXPECT_EQ(e.code(), ir::ErrorCode::BadFormat);
  EXPECT_STREQ(e.what(), "checkpoint 'c.ckpt': tensor 'layer1.w': its zstd frame holds 256 bytes, the manifest says 288");
}

TEST_F(TensorCodecDamage, CrcMismatchIsRefused) {
  TensorEntry other = entry_;
  other.crc32 ^= 1;
  EXPECT_STREQ(decode_error(other, frame_).what(),
               "checkpoint 'c.ckpt': tensor 'layer1.w': its crc32 does not match the manifest (damaged data)");
}

TEST_F(TensorCodecDamage, ShuffleFlagChangedIsCaughtByTheCrc) {
  TensorEntry other = entry_;
  other.shuffle = false;
  EXPECT_STREQ(decode_error(other, frame_).what(),
               "checkpoint 'c.ckpt': tensor 'layer1.w': its crc32 does not match the manifest (damaged data)");
}

TEST_F(TensorCodecDamage, ZstdChecksumMismatchIsRefused) {
  std::vector<std::byte> f = frame_;
  f.back() ^= std::byte{0x01};  // the last 4 bytes are the frame's content checksum
  const ir::Error e = decode_error(entry_, f);
  EXPECT_EQ(e.code(), ir::ErrorCode::BadFormat);
  EXPECT_THAT(e.what(), HasSubstr("checkpoint 'c.ckpt': tensor 'layer1.w': zstd cannot decompress it ("));
  EXPECT_THAT(e.what(), HasSubstr("checksum"));
}

TEST_F(TensorCodecDamage, CheckFrameAcceptsTheEncodedFrame) {
  EXPECT_NO_THROW(check_frame(entry_, frame_, "checkpoint 'c.ckpt'"));
  std::vector<std::byte> f = frame_;
  f.push_back(std::byte{0});
  try {
    check_frame(entry_, f, "checkpoint 'c.ckpt'");
    FAIL();
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::BadFormat);
    EXPECT_STREQ(e.what(), "checkpoint 'c.ckpt': tensor 'layer1.w': its data is not one complete zstd frame (damaged)");
  }
}

TEST_F(TensorCodecDamage, FrameWithoutItsContentSizeIsRefused) {
  // A valid zstd frame of the same bytes, but without the content size field.
  ZSTD_CCtx* ctx = ZSTD_createCCtx();
  ASSERT_NE(ctx, nullptr);
  ZSTD_CCtx_setParameter(ctx, ZSTD_c_contentSizeFlag, 0);
  ZSTD_CCtx_setParameter(ctx, ZSTD_c_checksumFlag, 1);
  std::vector<std::byte> shuffled(data_.size()), f(ZSTD_compressBound(data_.size()));
  byte_shuffle(data_.data(), shuffled.data(), data_.size(), 4);
  const size_t n = ZSTD_compress2(ctx, f.data(), f.size(), shuffled.data(), shuffled.size());
  ZSTD_freeCCtx(ctx);
  ASSERT_FALSE(ZSTD_isError(n));
  f.resize(n);
  ASSERT_EQ(ZSTD_getFrameContentSize(f.data(), f.size()), ZSTD_CONTENTSIZE_UNKNOWN);
  const ir::Error e = decode_error(entry_, f);
  EXPECT_EQ(e.code(), ir::ErrorCode::BadFormat);
  EXPECT_STREQ(e.what(), "checkpoint 'c.ckpt': tensor 'layer1.w': its zstd frame does not record its size (damaged)");
}

TEST_F(TensorCodecDamage, WrongOutputSizeIsInternal) {
  std::vector<std::byte> out(entry_.bytes() + 1);
  try {
    decode_tensor(entry_, frame_, out, "checkpoint 'c.ckpt'");
    FAIL();
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::Internal);
    EXPECT_STREQ(e.what(), "checkpoint 'c.ckpt': tensor 'layer1.w': output buffer of 257 bytes");
  }
}

}  // namespace
}  // namespace plexus::checkpoint
