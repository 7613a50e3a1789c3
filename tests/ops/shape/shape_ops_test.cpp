// Shape ops (core/ops/shape/shape_ops.cpp): reshape (a zero-copy view, one -1 allowed),
// transpose (perm; empty = reverse), expand (numpy broadcast_to), flatten (a view,
// [prod(dims < axis), prod(dims >= axis)]).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

// Same elements, row-major order kept, new shape.
Reference reshape_reference(ir::Shape shape) {
  return [shape](const std::vector<Value>& in) { return Value{in[0].dtype, shape, in[0].data}; };
}

// out[i0..ik] = x[index with out dim j at position perm[j]].
Reference transpose_reference(std::vector<int64_t> perm) {
  return [perm](const std::vector<Value>& in) {
    const Value& x = in[0];
    const size_t rank = x.shape.size();
    ir::Shape out_shape(rank);
    for (size_t j = 0; j < rank; ++j) out_shape[j] = x.shape[static_cast<size_t>(perm[j])];
    Value y{x.dtype, out_shape, std::vector<double>(x.data.size())};
    std::vector<int64_t> out_index(rank, 0), in_index(rank);
    for (size_t flat = 0; flat < y.data.size(); ++flat) {
      for (size_t j = 0; j < rank; ++j) in_index[static_cast<size_t>(perm[j])] = out_index[j];
      int64_t src = 0;
      for (size_t d = 0; d < rank; ++d) src = src * x.shape[d] + in_index[d];
      y.data[flat] = x.data[static_cast<size_t>(src)];
      for (size_t d = rank; d-- > 0;) {
        if (++out_index[d] < out_shape[d]) break;
        out_index[d] = 0;
      }
    }
    return y;
  };
}

Reference expand_reference(ir::Shape shape) {
  return [shape](const std::vector<Value>& in) { return Value{in[0].dtype, shape, broadcast_to(in[0], shape)}; };
}

// --- reshape -------------------------------------------------------------------------

struct ReshapeCase {
  ir::Shape in;
  Ints target;
  ir::Shape expected;
};

TEST(Reshape, InfersMinusOneAndKeepsOrder) {
  const ReshapeCase cases[] = {
      {{2, 3, 4}, {4, -1}, {4, 6}},
      {{2, 3, 4}, {-1}, {24}},
      {{2, 3, 4}, {2, -1, 2}, {2, 6, 2}},
      {{2, 3, 4}, {-1, 1, 12}, {2, 1, 12}},
      {{2, 3, 4}, {24, 1, 1}, {24, 1, 1}},
      {{6}, {3, 2}, {3, 2}},
      {{1, 1}, {}, {}},
      {{}, {1, -1}, {1, 1}},
  };
  for (const ReshapeCase& c : cases) {
    SCOPED_TRACE(testing::Message() << "target " << ::testing::PrintToString(c.target));
    expect_gradients("reshape", {random_f32(c.in, 1)}, make_attrs({{"shape", c.target}}),
                     reshape_reference(c.expected));
  }
}

TEST(Reshape, IsAZeroCopyView) {
  ir::Graph g;
  const Value x = random_f32({2, 6}, 2);
  const ir::TensorId in = add_inputs(g, {x}).front();
  const ir::TensorId y = g.add_op("reshape", {in}, make_attrs({{"shape", Ints{3, 4}}})).front();
  EXPECT_EQ(g.tensor(y).alias_of, in);
  EXPECT_EQ(g.storage_root(y), in);
  expect_equal(evaluate(g, {y}).front(), Value{x.dtype, {3, 4}, x.data}, "view of a variable");
}

TEST(Reshape, ViewOfAnOpOutputFeedsLaterOps) {
  // neg -> reshape (view of neg's buffer) -> transpose -> neg: the view must see the data
  // neg wrote and keep its buffer alive until transpose has read it.
  ir::Graph g;
  const Value x = random_f32({2, 6}, 3);
  const ir::TensorId in = add_inputs(g, {x}).front();
  const ir::TensorId a = g.add_op("neg", {in}, {}).front();
  const ir::TensorId b = g.add_op("reshape", {a}, make_attrs({{"shape", Ints{4, 3}}})).front();
  const ir::TensorId c = g.add_op("transpose", {b}, {}).front();
  const ir::TensorId d = g.add_op("neg", {c}, {}).front();
  const Value expected = transpose_reference({1, 0})({Value{x.dtype, {4, 3}, x.data}});
  expect_equal(evaluate(g, {d}).front(), expected, "neg(transpose(reshape(neg(x))))");
}

TEST(Reshape, WorksOnEveryDtype) {
  expect_equal(run_op1("reshape", {i32({2, 2}, {1, -2, 3, -4})}, make_attrs({{"shape", Ints{4}}})),
               i32({4}, {1, -2, 3, -4}), "int32");
  expect_equal(run_op1("reshape", {u8({4}, {1, 2, 3, 255})}, make_attrs({{"shape", Ints{-1, 2}}})),
               u8({2, 2}, {1, 2, 3, 255}), "uint8");
}

TEST(Reshape, TwoMinusOnesAreRejected) {
  const OpError e = expect_build_error("reshape", {random_f32({2, 3}, 1)}, make_attrs({{"shape", Ints{-1, -1}}}),
                                       ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(e.message, HasSubstr("target shape [-1,-1] may hold one -1 and dims >= 1 only"));
}

TEST(Reshape, ZeroOrNegativeDimsAreRejected) {
  for (const Ints& target : {Ints{0, 6}, Ints{-2, 3}}) {
    SCOPED_TRACE(::testing::PrintToString(target));
    const OpError e = expect_build_error("reshape", {random_f32({2, 3}, 1)}, make_attrs({{"shape", target}}),
                                         ir::ErrorCode::ShapeMismatch);
    EXPECT_THAT(e.message, HasSubstr("may hold one -1 and dims >= 1 only"));
  }
}

TEST(Reshape, ElementCountMismatchIsRejected) {
  const OpError e = expect_build_error("reshape", {random_f32({2, 3}, 1)}, make_attrs({{"shape", Ints{4}}}),
                                       ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(e.message, HasSubstr("cannot reshape 6 elements to [4]"));
  const OpError f = expect_build_error("reshape", {random_f32({2, 3}, 1)}, make_attrs({{"shape", Ints{4, -1}}}),
                                       ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(f.message, HasSubstr("cannot reshape 6 elements to [4,-1]"));
}

// Found by tests/fuzz/c_api_sequence_fuzzer: the product of the known dims overflowed int64
// (undefined behaviour) before the element count was compared.
TEST(Reshape, KnownDimsWhoseProductOverflowsAreRejected) {
  const int64_t huge = std::numeric_limits<int64_t>::max();
  for (const Ints& target : {Ints{huge, 4}, Ints{huge, -1, 2}, Ints{int64_t{1} << 32, int64_t{1} << 32}}) {
    SCOPED_TRACE(::testing::PrintToString(target));
    const OpError e = expect_build_error("reshape", {random_f32({2, 3}, 1)}, make_attrs({{"shape", target}}),
                                         ir::ErrorCode::ShapeMismatch);
    EXPECT_THAT(e.message, HasSubstr("cannot reshape 6 elements to ["));
  }
}

TEST(Reshape, ShapeAttributeIsRequired) {
  const OpError e = expect_build_error("reshape", {random_f32({2, 3}, 1)}, {}, ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("required attribute 'shape'"));
}

// --- transpose -----------------------------------------------------------------------

TEST(Transpose, EmptyPermReversesDims) {
  expect_equal(run_op1("transpose", {f32({2, 3}, {1, 2, 3, 4, 5, 6})}), f32({3, 2}, {1, 4, 2, 5, 3, 6}), "2-d");
  expect_gradients("transpose", {random_f32({2, 3, 4}, 4)}, {}, transpose_reference({2, 1, 0}));
}

TEST(Transpose, TwoDimensionalPerms) {
  for (const Ints& perm : {Ints{1, 0}, Ints{0, 1}}) {
    SCOPED_TRACE(::testing::PrintToString(perm));
    expect_gradients("transpose", {random_f32({3, 5}, 5)}, make_attrs({{"perm", perm}}), transpose_reference(perm));
  }
  // [N,1] and [1,N]: unit dims on either side.
  expect_gradients("transpose", {random_f32({4, 1}, 6)}, {}, transpose_reference({1, 0}));
  expect_gradients("transpose", {random_f32({1, 4}, 7)}, {}, transpose_reference({1, 0}));
}

TEST(Transpose, EveryThreeDimensionalPerm) {
  Ints perm{0, 1, 2};
  do {
    SCOPED_TRACE(::testing::PrintToString(perm));
    // Non-involutions such as {1,2,0} catch a gradient that applies perm instead of its inverse.
    expect_gradients("transpose", {random_f32({2, 3, 4}, 8)}, make_attrs({{"perm", perm}}), transpose_reference(perm));
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(Transpose, RankFour) {
  const Ints perm{2, 0, 3, 1};
  expect_gradients("transpose", {random_f32({2, 3, 2, 5}, 9)}, make_attrs({{"perm", perm}}), transpose_reference(perm));
}

TEST(Transpose, WorksOnEveryDtype) {
  expect_equal(run_op1("transpose", {i32({2, 3}, {1, 2, 3, 4, 5, -6})}), i32({3, 2}, {1, 4, 2, 5, 3, -6}), "int32");
  expect_equal(run_op1("transpose", {u8({2, 3}, {1, 2, 3, 4, 5, 6})}, make_attrs({{"perm", Ints{1, 0}}})),
               u8({3, 2}, {1, 4, 2, 5, 3, 6}), "uint8");
}

TEST(Transpose, BadPermsAreRejected) {
  for (const Ints& perm : {Ints{0, 0, 1}, Ints{1, 0}, Ints{0, 1, 3}, Ints{0, 1, 2, 3}, Ints{-1, 0, 1}}) {
    SCOPED_TRACE(::testing::PrintToString(perm));
    const OpError e = expect_build_error("transpose", {random_f32({2, 3, 4}, 1)}, make_attrs({{"perm", perm}}),
                                         ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.message, HasSubstr("perm " + ir::shape_string(perm) + " is not a permutation of the 3 dims"));
  }
}

// --- expand --------------------------------------------------------------------------

struct ExpandCase {
  ir::Shape in;
  Ints target;
};

TEST(Expand, BroadcastsLikeNumpy) {
  const ExpandCase cases[] = {
      {{3}, {2, 3}},    {{2, 1}, {2, 4}}, {{1, 3, 1}, {2, 3, 4}}, {{}, {2, 2}}, {{3}, {4, 2, 3}},
      {{2, 3}, {2, 3}}, {{1}, {5}},       {{2, 1, 3}, {2, 4, 3}},
  };
  for (const ExpandCase& c : cases) {
    SCOPED_TRACE(testing::Message() << ::testing::PrintToString(c.in) << " -> " << ::testing::PrintToString(c.target));
    expect_gradients("expand", {random_f32(c.in, 10)}, make_attrs({{"shape", c.target}}), expand_reference(c.target));
  }
}

TEST(Expand, ValuesByHand) {
  expect_equal(run_op1("expand", {f32({2, 1}, {1, 2})}, make_attrs({{"shape", Ints{2, 3}}})),
               f32({2, 3}, {1, 1, 1, 2, 2, 2}), "[2,1] -> [2,3]");
  expect_equal(run_op1("expand", {i32({3}, {7, 8, 9})}, make_attrs({{"shape", Ints{2, 3}}})),
               i32({2, 3}, {7, 8, 9, 7, 8, 9}), "int32 [3] -> [2,3]");
  expect_equal(run_op1("expand", {u8({}, {5})}, make_attrs({{"shape", Ints{3}}})), u8({3}, {5, 5, 5}),
               "uint8 [] -> [3]");
}

TEST(Expand, IncompatibleTargetsAreRejected) {
  for (const Ints& target : {Ints{3, 3}, Ints{3}, Ints{2, 1}, Ints{2, 6}}) {
    SCOPED_TRACE(::testing::PrintToString(target));
    const OpError e = expect_build_error("expand", {random_f32({2, 3}, 1)}, make_attrs({{"shape", target}}),
                                         ir::ErrorCode::ShapeMismatch);
    EXPECT_THAT(e.message, HasSubstr("cannot broadcast to " + ir::shape_string(target)));
  }
}

// --- flatten -------------------------------------------------------------------------

struct FlattenCase {
  ir::Shape in;
  int64_t axis;
  ir::Shape expected;
};

TEST(Flatten, SplitsTheDimsAtTheAxis) {
  const FlattenCase cases[] = {
      {{2, 20, 4, 4}, 1, {2, 320}},  // the seed's view(-1, 320) at batch 2
      {{2, 3, 4}, 0, {1, 24}},       {{2, 3, 4}, 2, {6, 4}},  {{2, 3, 4}, 3, {24, 1}},
      {{2, 3, 4}, -1, {6, 4}},       {{2, 3, 4}, -3, {1, 24}}, {{5}, 1, {5, 1}},
      {{5}, 0, {1, 5}},              {{}, 0, {1, 1}},
  };
  for (const FlattenCase& c : cases) {
    SCOPED_TRACE(testing::Message() << ir::shape_string(c.in) << " axis " << c.axis);
    expect_gradients("flatten", {random_f32(c.in, 21)}, make_attrs({{"axis", c.axis}}), reshape_reference(c.expected));
  }
}

TEST(Flatten, DefaultAxisIsOne) {
  const Value x = random_f32({3, 2, 2}, 22);
  expect_equal(run_op1("flatten", {x}), Value{x.dtype, {3, 4}, x.data}, "axis 1");
}

TEST(Flatten, IsAZeroCopyViewOnEveryDtype) {
  ir::Graph g;
  const Value x = i32({2, 2, 2}, {1, -2, 3, -4, 5, -6, 7, -8});
  const ir::TensorId in = add_inputs(g, {x}).front();
  const ir::TensorId y = g.add_op("flatten", {in}, {}).front();
  EXPECT_EQ(g.tensor(y).alias_of, in);
  expect_equal(evaluate(g, {y}).front(), i32({2, 4}, x.data), "int32 view of a variable");
  expect_equal(run_op1("flatten", {u8({2, 1}, {1, 255})}, make_attrs({{"axis", int64_t{0}}})), u8({1, 2}, {1, 255}),
               "uint8");
}

TEST(Flatten, AxisOutOfRangeIsRejected) {
  for (const int64_t axis : {int64_t{4}, int64_t{-4}}) {
    SCOPED_TRACE(axis);
    const OpError e = expect_build_error("flatten", {random_f32({2, 3, 4}, 1)}, make_attrs({{"axis", axis}}),
                                         ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.message, HasSubstr("axis " + std::to_string(axis) + " must be in [-3, 3] for rank 3"));
  }
}

TEST(Alias, IsAZeroCopyViewOfTheSameTypeWithGradients) {
  ir::Graph g;
  const Value x = random_f32({2, 3}, 4);
  const ir::TensorId in = add_inputs(g, {x}).front();
  const ir::TensorId y = g.add_op("alias", {in}, {}).front();
  EXPECT_EQ(g.storage_root(y), in);
  expect_equal(evaluate(g, {y}).front(), x, "alias of a variable");
  expect_gradients("alias", {x}, {}, [](const std::vector<Value>& in) { return in[0]; });
}

}  // namespace
}  // namespace plexus::ops::test
