#include "core/ir/shape.h"

#include <gtest/gtest.h>

namespace plexus::ir {
namespace {

TEST(Shape, NumelAndStrings) {
  EXPECT_EQ(numel(Shape{}), 1);
  EXPECT_EQ(numel(Shape{8, 784}), 6272);
  EXPECT_EQ(shape_string(Shape{}), "[]");
  EXPECT_EQ(shape_string(Shape{8, 28, 28}), "[8,28,28]");
  EXPECT_EQ(row_major_strides(Shape{2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
}

TEST(Shape, NumpyBroadcasting) {
  Shape out;
  ASSERT_TRUE(broadcast_shapes(Shape{8, 32}, Shape{32}, out));
  EXPECT_EQ(out, (Shape{8, 32}));
  ASSERT_TRUE(broadcast_shapes(Shape{4, 1, 3}, Shape{5, 1}, out));
  EXPECT_EQ(out, (Shape{4, 5, 3}));
  ASSERT_TRUE(broadcast_shapes(Shape{}, Shape{2, 2}, out));
  EXPECT_EQ(out, (Shape{2, 2}));
  EXPECT_FALSE(broadcast_shapes(Shape{2, 3}, Shape{2}, out));
}

TEST(Shape, NormalizeAxis) {
  EXPECT_EQ(normalize_axis(-1, 3), 2);
  EXPECT_EQ(normalize_axis(0, 3), 0);
  EXPECT_EQ(normalize_axis(3, 3), -1);
  EXPECT_EQ(normalize_axis(-4, 3), -1);
}

}  // namespace
}  // namespace plexus::ir
