#include "core/memory/memory_plan.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

namespace plexus::memory {
namespace {

bool overlap_in_time(const BufferRequest& a, const BufferRequest& b) { return a.first <= b.last && b.first <= a.last; }

// The plan's core guarantee: buffers live at a common position never share bytes.
void expect_valid(const std::vector<BufferRequest>& reqs, const MemoryPlan& plan) {
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % kAlignment, 0u);
    EXPECT_LE(plan.offsets[i] + reqs[i].bytes, plan.arena_bytes);
    for (size_t j = i + 1; j < reqs.size(); ++j) {
      const bool time = reqs[i].persistent || reqs[j].persistent || overlap_in_time(reqs[i], reqs[j]);
      const bool space = plan.offsets[i] < plan.offsets[j] + reqs[j].bytes && plan.offsets[j] < plan.offsets[i] + reqs[i].bytes;
      EXPECT_FALSE(time && space) << "buffers " << i << " and " << j << " collide";
    }
  }
  EXPECT_GE(plan.arena_bytes, plan.peak_live_bytes);
}

TEST(MemoryPlan, AlignUpRoundsToWholeCacheLines) {
  static_assert(align_up(0) == 0 && align_up(64) == 64, "usable in constant expressions");
  EXPECT_EQ(align_up(1), kAlignment);
  EXPECT_EQ(align_up(kAlignment - 1), kAlignment);
  EXPECT_EQ(align_up(kAlignment + 1), 2 * kAlignment);
  EXPECT_EQ(align_up(5 * kAlignment), 5 * kAlignment);
  EXPECT_EQ(align_up(SIZE_MAX - kAlignment + 1), SIZE_MAX - kAlignment + 1) << "the largest size it takes";
}

TEST(MemoryPlan, BuffersWithDisjointLifetimesShareBytes) {
  const std::vector<BufferRequest> reqs = {{1000, 1, 2, false}, {1000, 3, 4, false}, {1000, 5, 6, false}};
  const MemoryPlan plan = plan_memory(reqs, 7);
  expect_valid(reqs, plan);
  EXPECT_EQ(plan.arena_bytes, 1024u);  // one aligned slot reused three times
  EXPECT_EQ(plan.peak_live_bytes, 1000u);
}

TEST(MemoryPlan, PersistentBuffersComeFirstAndAreAlwaysLive) {
  const std::vector<BufferRequest> reqs = {{100, 0, 0, true}, {64, 1, 1, false}, {200, 0, 0, true}};
  const MemoryPlan plan = plan_memory(reqs, 3);
  expect_valid(reqs, plan);
  EXPECT_EQ(plan.offsets[0], 0u);
  EXPECT_EQ(plan.offsets[2], 128u);
  EXPECT_EQ(plan.persistent_bytes, 300u);
  EXPECT_EQ(plan.live_bytes, (std::vector<size_t>{300, 364, 300}));
  EXPECT_EQ(plan.peak_live_bytes, 364u);
}

TEST(MemoryPlan, BestFitReusesTheSmallestGapThatHolds) {
  // A (0..4) and C (0..4) pin space; B (1..1) and D (3..3) have gaps to choose from.
  const std::vector<BufferRequest> reqs = {{512, 0, 4, false}, {128, 1, 1, false}, {256, 0, 4, false}, {128, 3, 3, false}};
  const MemoryPlan plan = plan_memory(reqs, 5);
  expect_valid(reqs, plan);
  EXPECT_EQ(plan.offsets[1], plan.offsets[3]);  // B and D never live together: same bytes
  EXPECT_EQ(plan.arena_bytes, 512u + 256u + 128u);
}

TEST(MemoryPlan, RandomPlansNeverCollide) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<BufferRequest> reqs;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      const int64_t first = rng() % 20;
      reqs.push_back({1 + rng() % 5000, first, first + static_cast<int64_t>(rng() % 6), rng() % 8 == 0});
    }
    const MemoryPlan plan = plan_memory(reqs, 26);
    expect_valid(reqs, plan);
    // Exact accounting: live bytes at each position are the sum of the live buffers.
    for (int64_t p = 0; p < 26; ++p) {
      size_t live = 0;
      for (const auto& r : reqs) live += (r.persistent || (r.first <= p && p <= r.last)) ? r.bytes : 0;
      EXPECT_EQ(plan.live_bytes[static_cast<size_t>(p)], live);
    }
  }
}

}  // namespace
}  // namespace plexus::memory
