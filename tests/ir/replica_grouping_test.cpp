// Replica groupings against seed 001's tables 13.1-13.3 (R=16), the reference
// implementation's validity rule, and transposes.
#include "core/ir/replica_grouping.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/ir/error.h"

namespace plexus::ir {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::vector<int64_t>> all_groups(const ReplicaGrouping& g) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t k = 0; k < g.num_groups(); ++k) out.push_back(g.members(k));
  return out;
}

TEST(ReplicaGrouping, Table13_1_GroupSize4Stride1) {
  const ReplicaGrouping g(16, 4, 1);
  EXPECT_EQ(all_groups(g), (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}}));
  for (int64_t r = 0; r < 16; ++r) EXPECT_EQ(g.group_of(r), r / 4);
}

TEST(ReplicaGrouping, Table13_2_GroupSize4Stride4) {
  const ReplicaGrouping g(16, 4, 4);
  EXPECT_EQ(all_groups(g), (std::vector<std::vector<int64_t>>{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}}));
  for (int64_t r = 0; r < 16; ++r) EXPECT_EQ(g.group_of(r), r % 4);
}

TEST(ReplicaGrouping, Table13_3_GroupSize1) {
  const ReplicaGrouping g(16, 1, 1);
  ASSERT_EQ(g.num_groups(), 16);
  for (int64_t r = 0; r < 16; ++r) {
    EXPECT_THAT(g.members(r), ElementsAre(r));
    EXPECT_EQ(g.group_of(r), r);
    EXPECT_EQ(g.position_in_group(r), 0);
  }
}

TEST(ReplicaGrouping, ValidGroupingTheSeedsWordingWouldReject) {
  // R=8, stride 2, group size 2: stride * group_size != R, yet R % (s*g) == 0.
  const ReplicaGrouping g(8, 2, 2);
  EXPECT_EQ(all_groups(g), (std::vector<std::vector<int64_t>>{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  for (int64_t k = 0; k < g.num_groups(); ++k) {
    for (int64_t m : g.members(k)) EXPECT_EQ(g.group_of(m), k);
  }
  EXPECT_EQ(g.position_in_group(6), 1);
}

TEST(ReplicaGrouping, InvalidGroupingsNameRGroupSizeAndStride) {
  const std::tuple<int64_t, int64_t, int64_t> bad[] = {{8, 3, 1}, {8, 2, 3}, {8, 0, 1}, {8, 2, 0}, {8, 16, 1}, {0, 1, 1}, {6, 4, 1}};
  for (const auto& [r, g, s] : bad) {
    try {
      ReplicaGrouping grouping(r, g, s);
      ADD_FAILURE() << "accepted R=" << r << " g=" << g << " s=" << s;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidGrouping);
      EXPECT_THAT(e.what(), HasSubstr("replication factor " + std::to_string(r) + ", group_size " + std::to_string(g) +
                                      ", stride " + std::to_string(s)));
    }
  }
}

TEST(ReplicaGrouping, TransposeIsTheOrthogonalGrouping) {
  EXPECT_EQ(ReplicaGrouping(16, 4, 1).transpose(), ReplicaGrouping(16, 4, 4));  // 13.1 <-> 13.2
  EXPECT_EQ(ReplicaGrouping(16, 4, 4).transpose(), ReplicaGrouping(16, 4, 1));
  EXPECT_EQ(ReplicaGrouping(8, 2, 1).transpose(), ReplicaGrouping(8, 4, 2));
  EXPECT_EQ(ReplicaGrouping(8, 8, 1).transpose(), ReplicaGrouping(8, 1, 8));
  // Every replica sits in exactly one group of each, and a group of one meets a group of
  // the other in exactly one replica.
  const ReplicaGrouping g(8, 2, 1), t = g.transpose();
  for (int64_t a = 0; a < g.num_groups(); ++a) {
    for (int64_t b = 0; b < t.num_groups(); ++b) {
      int shared = 0;
      for (int64_t m : g.members(a)) shared += t.group_of(m) == b;
      EXPECT_EQ(shared, 1);
    }
  }
  try {
    ReplicaGrouping(8, 2, 2).transpose();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidGrouping);
    EXPECT_THAT(e.what(), HasSubstr("does not exist"));
  }
}

TEST(ReplicaGrouping, OutOfRangeQueriesAreErrors) {
  const ReplicaGrouping g(4, 2, 1);
  EXPECT_THROW(g.group_of(4), Error);
  EXPECT_THROW(g.group_of(-1), Error);
  EXPECT_THROW(g.members(2), Error);
}

}  // namespace
}  // namespace plexus::ir
