// gather (core/ops/shape/gather.cpp): gather(table [V, D...], indices int32 [I...]) -> [I..., D...],
// out[i...] = table[indices[i...]] (PyTorch F.embedding); its gradient op
// gather_grad(indices, dy; num_rows) scatter-adds dy's rows into zeros [num_rows, D...].
// An index outside [0, V) is a run error naming the op, the index and its position.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

// Elements per table row (prod of D...).
int64_t row_size(const ir::Shape& table) {
  int64_t n = 1;
  for (size_t d = 1; d < table.size(); ++d) n *= table[d];
  return n;
}

Value gather_reference(const std::vector<Value>& in) {
  const Value &table = in[0], &indices = in[1];
  const int64_t row = row_size(table.shape);
  ir::Shape shape = indices.shape;
  shape.insert(shape.end(), table.shape.begin() + 1, table.shape.end());
  Value y{table.dtype, shape, {}};
  for (double index : indices.data) {
    const auto first = table.data.begin() + static_cast<int64_t>(index) * row;
    y.data.insert(y.data.end(), first, first + row);
  }
  return y;
}

// in = {indices, dy}: zeros [num_rows, D...] with dy's rows added at their indices.
Reference gather_grad_reference(int64_t num_rows) {
  return [num_rows](const std::vector<Value>& in) {
    const Value &indices = in[0], &dy = in[1];
    const ir::Shape row_shape(dy.shape.begin() + static_cast<int64_t>(indices.shape.size()), dy.shape.end());
    ir::Shape shape{num_rows};
    shape.insert(shape.end(), row_shape.begin(), row_shape.end());
    const int64_t row = ir::numel(row_shape);
    Value out{ir::DType::Float32, shape, std::vector<double>(static_cast<size_t>(num_rows * row), 0.0)};
    for (size_t p = 0; p < indices.data.size(); ++p) {
      for (int64_t j = 0; j < row; ++j) {
        out.data[static_cast<size_t>(static_cast<int64_t>(indices.data[p]) * row + j)] +=
            dy.data[p * static_cast<size_t>(row) + static_cast<size_t>(j)];
      }
    }
    return out;
  };
}

struct GatherCase {
  ir::Shape table;
  Value indices;
};

TEST(Gather, ForwardAndTableGradientMatchDoubleReference) {
  const GatherCase cases[] = {
      {{5, 3}, i32({2, 3}, {4, 0, 4, 1, 4, 2})},     // row 4 hit three times: its gradient accumulates
      {{7, 2, 3}, i32({4}, {6, 0, 3, 3})},           // rows of rank 2
      {{6}, i32({3}, {5, 0, 5})},                    // scalar rows
      {{6}, i32({}, {2})},                           // scalar index, scalar result
      {{4, 5}, i32({}, {3})},                        // scalar index: one row
      {{3, 4}, i32({1, 2, 2}, {2, 2, 2, 2})},        // every position hits the same row
      {{1, 8}, i32({2, 1, 3}, {0, 0, 0, 0, 0, 0})},  // V = 1
  };
  uint32_t seed = 1;
  for (const GatherCase& c : cases) {
    SCOPED_TRACE(testing::Message() << "table " << ::testing::PrintToString(c.table) << " indices "
                                    << ::testing::PrintToString(c.indices.shape));
    expect_gradients("gather", {random_f32(c.table, seed++), c.indices}, {}, gather_reference);
  }
}

TEST(Gather, CopiesRowsOfAnyDtype) {
  expect_equal(run_op1("gather", {i32({3, 2}, {1, -2, 3, -4, 5, -6}), i32({2}, {2, 0})}), i32({2, 2}, {5, -6, 1, -2}),
               "int32 table");
  expect_equal(run_op1("gather", {u8({3}, {7, 8, 255}), i32({2, 2}, {2, 2, 0, 1})}), u8({2, 2}, {255, 255, 7, 8}),
               "uint8 table");
}

TEST(Gather, IndexOutOfRangeIsARunErrorNamingThePosition) {
  struct Case {
    double bad;
    size_t flat;
    const char* position;
  };
  for (const Case c : {Case{5, 3, "[1,1]"}, Case{-1, 0, "[0,0]"}, Case{2147483647, 5, "[2,1]"}}) {
    SCOPED_TRACE(testing::Message() << "index " << c.bad << " at " << c.position);
    std::vector<double> indices{0, 1, 2, 3, 4, 0};
    indices[c.flat] = c.bad;
    const std::string rule = "index " + std::to_string(static_cast<int64_t>(c.bad)) + " at position " + c.position +
                             " of the indices is outside [0, 5)";

    const OpError e = op_error("gather", {random_f32({5, 2}, 1), i32({3, 2}, indices)});
    EXPECT_EQ(e.stage, Stage::Run);
    EXPECT_EQ(e.code, ir::ErrorCode::Runtime);
    EXPECT_THAT(e.message, HasSubstr("op 'gather#0'"));
    EXPECT_THAT(e.message, HasSubstr(rule));

    const OpError g = op_error("gather_grad", {i32({3, 2}, indices), random_f32({3, 2, 2}, 2)},
                               make_attrs({{"num_rows", int64_t{5}}}));
    EXPECT_EQ(g.stage, Stage::Run);
    EXPECT_EQ(g.code, ir::ErrorCode::Runtime);
    EXPECT_THAT(g.message, HasSubstr("op 'gather_grad#0'"));
    EXPECT_THAT(g.message, HasSubstr(rule));
  }
}

TEST(Gather, DtypesAndShapesAreChecked) {
  const OpError e =
      expect_build_error("gather", {random_f32({4, 2}, 1), f32({2}, {0, 1})}, {}, ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(e.message, HasSubstr("input 1 must be int32"));

  const OpError s = expect_build_error("gather", {f32({}, {1}), i32({1}, {0})}, {}, ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(s.message, HasSubstr("the table must have rank >= 1"));

  const OpError r = expect_build_error("gather", {random_f32({2, 1, 1, 1, 1, 1, 1, 2}, 1), i32({1, 1}, {0})}, {},
                                       ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(r.message, HasSubstr("the output's rank 9"));
}

TEST(GatherGrad, ScatterAddsRowsIntoZeros) {
  const Value indices = i32({2, 3}, {1, 3, 1, 1, 0, 3});
  for (int64_t num_rows : {4, 6}) {  // rows 2 (and 4, 5) are never hit: zeros
    SCOPED_TRACE(num_rows);
    expect_forward("gather_grad", {indices, random_f32({2, 3, 2}, 3)}, make_attrs({{"num_rows", num_rows}}),
                   gather_grad_reference(num_rows));
  }
}

TEST(GatherGrad, ShapesDtypesAndNumRowsAreChecked) {
  const ir::Attributes rows = make_attrs({{"num_rows", int64_t{4}}});
  const Value indices = i32({2, 3}, {0, 1, 2, 3, 0, 1});
  const OpError s =
      expect_build_error("gather_grad", {indices, random_f32({3, 2, 2}, 1)}, rows, ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(s.message, HasSubstr("dy's shape must start with the indices' shape"));
  const OpError d = expect_build_error("gather_grad", {f32({2, 3}, {0, 1, 2, 3, 0, 1}), random_f32({2, 3}, 1)}, rows,
                                       ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(d.message, HasSubstr("input 0 must be int32"));
  const OpError n = expect_build_error("gather_grad", {indices, random_f32({2, 3}, 1)},
                                       make_attrs({{"num_rows", int64_t{0}}}), ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(n.message, HasSubstr("num_rows 0 must be >= 1"));
}

}  // namespace
}  // namespace plexus::ops::test
