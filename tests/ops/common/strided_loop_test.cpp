// Strided iteration (core/ops/common/strided_loop.cpp): broadcast strides follow numpy's rules,
// contiguous dims merge into one row, and every (index, operand) pair is visited once with
// the right offset whatever the shapes.
#include "core/ops/common/strided_loop.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/ir/error.h"

namespace plexus::ops {
namespace {

// Every element's offsets, in row-major order of `shape`, by visiting the loop's rows.
std::vector<std::vector<int64_t>> visit(const std::vector<int64_t>& shape, const std::vector<std::vector<int64_t>>& strides,
                                        int64_t* rows = nullptr) {
  std::vector<std::vector<int64_t>> out;
  int64_t count = 0;
  StridedLoop(shape, strides).run([&](const auto& offsets, int64_t n, const auto& inner) {
    ++count;
    for (int64_t i = 0; i < n; ++i) {
      std::vector<int64_t> element;
      for (size_t k = 0; k < strides.size(); ++k) element.push_back(offsets[k] + i * inner[k]);
      out.push_back(element);
    }
  });
  if (rows) *rows = count;
  return out;
}

TEST(BroadcastStrides, AreZeroOnBroadcastAndMissingDims) {
  EXPECT_EQ(broadcast_strides(std::vector<int64_t>{3, 4}, std::vector<int64_t>{3, 4}), (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(broadcast_strides(std::vector<int64_t>{4}, std::vector<int64_t>{2, 3, 4}), (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(broadcast_strides(std::vector<int64_t>{3, 1}, std::vector<int64_t>{3, 5}), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(broadcast_strides(std::vector<int64_t>{}, std::vector<int64_t>{2, 2}), (std::vector<int64_t>{0, 0}));
}

TEST(StridedLoop, ContiguousOperandsBecomeOneRow) {
  int64_t rows = 0;
  const auto offsets = visit({2, 3, 4}, {{12, 4, 1}, {12, 4, 1}}, &rows);
  EXPECT_EQ(rows, 1);
  ASSERT_EQ(offsets.size(), 24u);
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(offsets[static_cast<size_t>(i)], (std::vector<int64_t>{i, i}));
}

TEST(StridedLoop, ABroadcastRowRepeatsItsOffsets) {
  // out [3, 4] = a [3, 4] + b [4]: b's offsets restart every row.
  int64_t rows = 0;
  const auto offsets = visit({3, 4}, {{4, 1}, {0, 1}, {4, 1}}, &rows);
  EXPECT_EQ(rows, 3);
  ASSERT_EQ(offsets.size(), 12u);
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t c = 0; c < 4; ++c) {
      EXPECT_EQ(offsets[static_cast<size_t>(r * 4 + c)], (std::vector<int64_t>{r * 4 + c, c, r * 4 + c}));
    }
  }
}

TEST(StridedLoop, AColumnBroadcastHasAZeroInnerStride) {
  // a [2, 1] broadcast over [2, 3]: inner stride 0, one row per input row.
  int64_t rows = 0;
  const auto offsets = visit({2, 3}, {{1, 0}, {3, 1}}, &rows);
  EXPECT_EQ(rows, 2);
  const std::vector<std::vector<int64_t>> expected = {{0, 0}, {0, 1}, {0, 2}, {1, 3}, {1, 4}, {1, 5}};
  EXPECT_EQ(offsets, expected);
}

TEST(StridedLoop, ATransposedOperandIsVisitedInTheOutputsOrder) {
  // out [2, 3] from in [3, 2] read transposed: in's strides (1, 2).
  const auto offsets = visit({2, 3}, {{3, 1}, {1, 2}});
  const std::vector<std::vector<int64_t>> expected = {{0, 0}, {1, 2}, {2, 4}, {3, 1}, {4, 3}, {5, 5}};
  EXPECT_EQ(offsets, expected);
}

TEST(StridedLoop, AScalarIsOneElement) {
  int64_t rows = 0;
  const auto offsets = visit({}, {{}, {}}, &rows);
  EXPECT_EQ(rows, 1);
  EXPECT_EQ(offsets, (std::vector<std::vector<int64_t>>{{0, 0}}));
}

TEST(StridedLoop, AnEmptyDimensionVisitsNothing) {
  EXPECT_TRUE(visit({3, 0}, {{0, 1}}).empty());
}

TEST(StridedLoop, MoreThanThreeOperandsIsAnInternalError) {
  const std::vector<int64_t> shape = {2};
  const std::vector<std::vector<int64_t>> strides(4, std::vector<int64_t>{1});
  EXPECT_THROW(StridedLoop(shape, strides), ir::Error);
}

}  // namespace
}  // namespace plexus::ops
