#include "core/memory/arena.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "core/memory/memory_plan.h"

namespace plexus::memory {
namespace {

TEST(Arena, IsAlignedZeroedAndTracksLiveAndPeakBytes) {
  Arena arena(1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(arena.data()) % kAlignment, 0u);
  EXPECT_EQ(arena.capacity(), 1000u);
  for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(arena.data()[i], std::byte{0});
  arena.set_live_bytes(300);
  arena.set_live_bytes(700);
  arena.set_live_bytes(200);
  EXPECT_EQ(arena.live_bytes(), 200u);
  EXPECT_EQ(arena.peak_bytes(), 700u);
}

TEST(Arena, ZeroBytesStillGivesAValidBlock) {
  Arena arena(0);
  EXPECT_NE(arena.data(), nullptr);
  EXPECT_EQ(arena.capacity(), 0u);
}

}  // namespace
}  // namespace plexus::memory
