// One replica's remote buffers (core/memory/remote_memory.cpp): zeroed, aligned blocks,
// slot addresses entry * slot bytes apart, exact byte accounting (seed 001, 13.3).
#include "core/memory/remote_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "core/memory/memory_plan.h"

namespace plexus::memory {
namespace {

const std::vector<ir::RemoteBuffer> kBuffers = {
    {{4, 8}, ir::DType::Float32, 3, std::nullopt},  // 128 bytes a slot, 384 in all
    {{5}, ir::DType::UInt8, 2, std::nullopt},       // 5 bytes a slot, 10 in all
};

TEST(RemoteMemory, BytesAreExactWithoutPadding) {
  EXPECT_EQ(RemoteMemory(kBuffers).bytes(), 384u + 10u);
  EXPECT_EQ(RemoteMemory({}).bytes(), 0u);
  EXPECT_TRUE(RemoteMemory({}).bases().empty());
}

TEST(RemoteMemory, SlotsAreEntryTimesSlotBytesFromAnAlignedBase) {
  const RemoteMemory m(kBuffers);
  const std::vector<std::byte*> bases = m.bases();
  ASSERT_EQ(bases.size(), 2u);
  for (std::byte* base : bases) EXPECT_EQ(reinterpret_cast<uintptr_t>(base) % kAlignment, 0u);
  EXPECT_EQ(m.slot(0, 0), bases[0]);
  EXPECT_EQ(m.slot(0, 2), bases[0] + 256);
  EXPECT_EQ(m.slot(1, 1), bases[1] + 5);
  EXPECT_NE(bases[0], bases[1]);
}

TEST(RemoteMemory, StartsZeroedAndSlotsDoNotOverlap) {
  const RemoteMemory m(kBuffers);
  for (int64_t e = 0; e < 3; ++e) {
    for (size_t i = 0; i < 128; ++i) EXPECT_EQ(m.slot(0, e)[i], std::byte{0});
  }
  for (int64_t e = 0; e < 3; ++e) {
    for (size_t i = 0; i < 128; ++i) m.slot(0, e)[i] = static_cast<std::byte>(e + 1);
  }
  for (int64_t e = 0; e < 3; ++e) {
    EXPECT_EQ(m.slot(0, e)[0], static_cast<std::byte>(e + 1));
    EXPECT_EQ(m.slot(0, e)[127], static_cast<std::byte>(e + 1));
  }
  EXPECT_EQ(m.slot(1, 0)[0], std::byte{0});  // the other buffer is untouched
}

}  // namespace
}  // namespace plexus::memory
