// Tests of core/data/text_windows: the windows' bytes by the formula of the header, their
// count, the refusals, and a Loader serving them (tokens and targets of one micro-batch).
#include "core/data/text_windows.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/data/loader.h"
#include "tests/error_of.h"

namespace plexus::data {
namespace {

using ::testing::HasSubstr;
using test::error_of;

std::vector<int32_t> sample(const TextWindows& w, LoaderRole role, int64_t i) {
  std::vector<int32_t> out(static_cast<size_t>(w.field(role).elements));
  w.write(role, i, reinterpret_cast<std::byte*>(out.data()));
  return out;
}

TEST(TextWindows, WindowIHoldsContextPlusOneBytesFromIContext) {
  const std::string text = "abcdefghij";  // 10 bytes, context 3: (10 - 1) / 3 = 3 windows
  const TextWindows w(text, 3, "test");
  EXPECT_EQ(w.num_samples(), 3);
  EXPECT_EQ(w.field(LoaderRole::Images).dtype, ir::DType::Int32);
  EXPECT_EQ(w.field(LoaderRole::Labels).elements, 3);
  EXPECT_EQ(sample(w, LoaderRole::Images, 1), (std::vector<int32_t>{'d', 'e', 'f'}));
  EXPECT_EQ(sample(w, LoaderRole::Labels, 1), (std::vector<int32_t>{'e', 'f', 'g'}));
  EXPECT_EQ(sample(w, LoaderRole::Labels, 2), (std::vector<int32_t>{'h', 'i', 'j'}));
}

TEST(TextWindows, BytesAbove127AreTokensUpTo255) {
  const std::string text = "\xff\x80\x01";
  const TextWindows w(text, 2, "high bytes");
  EXPECT_EQ(sample(w, LoaderRole::Images, 0), (std::vector<int32_t>{255, 128}));
  EXPECT_EQ(sample(w, LoaderRole::Labels, 0), (std::vector<int32_t>{128, 1}));
}

TEST(TextWindows, AContextBelowOneOrATextShorterThanAWindowIsRefused) {
  const std::string text = "abc";
  const ir::Error context = error_of([&] { TextWindows(text, 0, "t"); });
  EXPECT_EQ(context.code(), ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(context.what(), HasSubstr("context is 0, must be >= 1"));
  const ir::Error short_text = error_of([&] { TextWindows(text, 3, "tiny.txt"); });
  EXPECT_THAT(short_text.what(), HasSubstr("the text (tiny.txt) has 3 bytes, fewer than one window of context + 1 = 4"));
}

TEST(TextWindows, ALoaderServesTokensAndTargetsAsInt32MicroBatches) {
  const std::string text = "0123456789abcdefghij";  // context 4: 4 windows
  const TextWindows w(text, 4, "digits");
  LoaderOptions o;
  o.batch_size = 2;
  o.shuffle = false;
  Loader loader(w, o);
  EXPECT_EQ(loader.runs_per_epoch(), 2);
  EXPECT_EQ(loader.fill_bytes(LoaderRole::Images), 2 * 4 * sizeof(int32_t));
  loader.begin_run(0, 1);
  std::vector<int32_t> tokens(8), targets(8);
  loader.fill(LoaderRole::Images, 0, 0, tokens.data(), 32);
  loader.fill(LoaderRole::Labels, 0, 0, targets.data(), 32);
  EXPECT_EQ(tokens, (std::vector<int32_t>{'8', '9', 'a', 'b', 'c', 'd', 'e', 'f'}));
  EXPECT_EQ(targets, (std::vector<int32_t>{'9', 'a', 'b', 'c', 'd', 'e', 'f', 'g'}));
  const ir::Error wrong = error_of([&] { loader.fill(LoaderRole::Labels, 0, 0, targets.data(), 8); });
  EXPECT_EQ(wrong.code(), ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(wrong.what(), HasSubstr("loader targets fill: buffer is 8 bytes, 32 expected (batch_size 2 x 4 int32)"));
}

}  // namespace
}  // namespace plexus::data
