#include "core/memory/host_block.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "core/ir/error.h"
#include "core/memory/memory_plan.h"
#include "tests/error_of.h"

namespace plexus::memory {
namespace {

using ::testing::HasSubstr;

TEST(HostBlock, IsAlignedZeroFilledAndRoundedUpToTheAlignment) {
  const HostBlock block = allocate_block(3, 7, "a test block");
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(block.get()) % kAlignment, 0u);
  for (size_t i = 0; i < kAlignment; ++i) ASSERT_EQ(block.get()[i], std::byte{0}) << i;
}

TEST(HostBlock, AnEmptyRequestStillGivesAValidBlock) { EXPECT_NE(allocate_block(0, 16, "an empty block"), nullptr); }

ir::Error refusal(size_t count, size_t item_bytes) {
  const ir::Error e = test::error_of([&] { allocate_block(count, item_bytes, "remote buffer 7"); });
  EXPECT_EQ(e.code(), ir::ErrorCode::OutOfDeviceMemory) << e.what();
  EXPECT_THAT(e.what(), HasSubstr("cannot allocate remote buffer 7"));
  return e;
}

// The c_api_sequence fuzzer's find: a stream queue of 12 TiB reached aligned_alloc, which
// a sanitizer aborts on and which, without one, only the OOM killer would have answered.
TEST(HostBlock, MoreThanPhysicalMemoryIsRefusedNamingTheBytes) {
  const ir::Error e = refusal(3, size_t{1} << 42);
  EXPECT_THAT(e.what(), HasSubstr("13194139533312 bytes exceed this machine's physical memory"));
}

TEST(HostBlock, ASizeThatOverflowsIsRefusedInsteadOfWrappingToASmallBlock) {
  EXPECT_THAT(refusal(size_t{1} << 33, size_t{1} << 32).what(), HasSubstr("8589934592 x 4294967296 bytes overflow"));
  EXPECT_THAT(refusal(1, SIZE_MAX - 3).what(), HasSubstr("overflow a 64-bit size"));
}

TEST(AlignedStride, RoundsUpToTheAlignmentAndSaturatesInsteadOfWrapping) {
  EXPECT_EQ(aligned_stride(0), 0u);
  EXPECT_EQ(aligned_stride(1), kAlignment);
  EXPECT_EQ(aligned_stride(kAlignment), kAlignment);
  EXPECT_EQ(aligned_stride(kAlignment + 1), 2 * kAlignment);
  EXPECT_EQ(aligned_stride(SIZE_MAX - kAlignment), SIZE_MAX - (kAlignment - 1));
  EXPECT_EQ(aligned_stride(SIZE_MAX - 3), SIZE_MAX);
  // A saturated stride is refused by allocate_block, never rounded down to a small block.
  EXPECT_THAT(refusal(1, aligned_stride(SIZE_MAX - 3)).what(), HasSubstr("overflow a 64-bit size"));
}

}  // namespace
}  // namespace plexus::memory
