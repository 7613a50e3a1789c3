#include "core/ir/shape.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "core/ir/error.h"

namespace plexus::ir {
namespace {

TEST(Shape, NumelAndStrings) {
  EXPECT_EQ(numel(Shape{}), 1);
  EXPECT_EQ(numel(Shape{8, 784}), 6272);
  EXPECT_EQ(shape_string(Shape{}), "[]");
  EXPECT_EQ(shape_string(Shape{8, 28, 28}), "[8,28,28]");
  EXPECT_EQ(row_major_strides(Shape{2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
}

TEST(Shape, ShapesOfMoreThan2To40ElementsAreRefused) {
  EXPECT_NO_THROW(check_shape(Shape{int64_t{1} << 20, int64_t{1} << 20}, "t"));
  for (const Shape& s : {Shape{int64_t{1} << 20, (int64_t{1} << 20) + 1}, Shape{int64_t{1} << 40, int64_t{1} << 40, 3},
                         Shape{INT64_MAX, 2}}) {
    try {
      check_shape(s, "variable 'w'");
      ADD_FAILURE() << shape_string(s) << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("variable 'w': shape " + shape_string(s) + " has more than 2^40 elements"),
                std::string::npos)
          << e.what();
    }
  }
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
