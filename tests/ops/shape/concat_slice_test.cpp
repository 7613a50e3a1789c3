// concat / split / slice / slice_grad (core/ops/shape/concat_slice.cpp): numpy concatenate along an
// axis, numpy split at cumulative sizes, basic slicing with step 1 (negative indices from
// the end, clamped like numpy; ONNX Slice), and slice's gradient op (dy put back into zeros).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "core/ir/autodiff.h"
#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

// Elements of `shape` before and after `axis`.
std::pair<int64_t, int64_t> outer_inner(const ir::Shape& shape, size_t axis) {
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  return {outer, inner};
}

size_t positive_axis(int64_t axis, size_t rank) {
  return static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis);
}

Reference concat_reference(int64_t axis_attr) {
  return [axis_attr](const std::vector<Value>& in) {
    const size_t axis = positive_axis(axis_attr, in[0].shape.size());
    ir::Shape shape = in[0].shape;
    shape[axis] = 0;
    for (const Value& x : in) shape[axis] += x.shape[axis];
    const auto [outer, inner] = outer_inner(shape, axis);
    Value y{in[0].dtype, shape, {}};
    for (int64_t o = 0; o < outer; ++o) {
      for (const Value& x : in) {
        const int64_t row = x.shape[axis] * inner;
        y.data.insert(y.data.end(), x.data.begin() + o * row, x.data.begin() + (o + 1) * row);
      }
    }
    return y;
  };
}

// x[starts:ends] along axes (empty = 0, 1, ...), numpy's clamping, in the test's own terms.
Reference slice_reference(Ints starts, Ints ends, Ints axes) {
  return [starts, ends, axes](const std::vector<Value>& in) {
    const Value& x = in[0];
    const size_t rank = x.shape.size();
    std::vector<int64_t> lo(rank, 0);
    ir::Shape hi = x.shape;
    for (size_t i = 0; i < starts.size(); ++i) {
      const size_t a = axes.empty() ? i : positive_axis(axes[i], rank);
      const int64_t dim = x.shape[a];
      auto clamp = [dim](int64_t v) { return std::clamp(v < 0 ? v + dim : v, int64_t{0}, dim); };
      lo[a] = clamp(starts[i]);
      hi[a] = clamp(ends[i]);
    }
    ir::Shape shape(rank);
    for (size_t d = 0; d < rank; ++d) shape[d] = hi[d] - lo[d];
    Value y{x.dtype, shape, {}};
    std::vector<int64_t> index(rank, 0);
    for (int64_t flat = 0; flat < ir::numel(x.shape); ++flat) {
      bool inside = true;
      for (size_t d = 0; d < rank; ++d) inside = inside && index[d] >= lo[d] && index[d] < hi[d];
      if (inside) y.data.push_back(x.data[static_cast<size_t>(flat)]);
      for (size_t d = rank; d-- > 0;) {
        if (++index[d] < x.shape[d]) break;
        index[d] = 0;
      }
    }
    return y;
  };
}

ir::Attributes slice_attrs(const Ints& starts, const Ints& ends, const Ints& axes) {
  return make_attrs({{"starts", starts}, {"ends", ends}, {"axes", axes}});
}

// --- concat --------------------------------------------------------------------------

struct ConcatCase {
  std::vector<ir::Shape> shapes;
  int64_t axis;
};

TEST(Concat, ForwardAndGradientsMatchDoubleReference) {
  const ConcatCase cases[] = {
      {{{2, 3}, {1, 3}}, 0},                              // rows
      {{{2, 1, 3}, {2, 4, 3}, {2, 2, 3}}, 1},             // a middle axis
      {{{2, 2}, {2, 3}}, -1},                             // negative axis
      {{{3, 2, 2}, {3, 2, 1}, {3, 2, 2}, {3, 2, 3}}, 2},  // four inputs, the last axis
      {{{4}, {1}, {2}}, 0},                               // rank 1
      {{{2, 3}}, 1},                                      // one input: a copy
  };
  uint32_t seed = 1;
  for (const ConcatCase& c : cases) {
    SCOPED_TRACE(testing::Message() << c.shapes.size() << " inputs, axis " << c.axis);
    std::vector<Value> inputs;
    for (const ir::Shape& s : c.shapes) inputs.push_back(random_f32(s, seed++));
    expect_gradients("concat", inputs, make_attrs({{"axis", c.axis}}), concat_reference(c.axis));
  }
}

TEST(Concat, DefaultAxisIsZeroAndEveryDtypeWorks) {
  expect_equal(run_op1("concat", {i32({1, 2}, {1, -2}), i32({2, 2}, {3, 4, 5, 6})}), i32({3, 2}, {1, -2, 3, 4, 5, 6}),
               "int32, axis 0");
  expect_equal(run_op1("concat", {u8({2, 1}, {1, 2}), u8({2, 2}, {3, 4, 5, 255})}, make_attrs({{"axis", int64_t{1}}})),
               u8({2, 3}, {1, 3, 4, 2, 5, 255}), "uint8, axis 1");
}

TEST(Concat, OnlyTheInputsThatNeedAGradientGetOne) {
  // x0 is a constant (autodiff wants no gradient for it), x1 a variable.
  ir::Graph g;
  const Value v = random_f32({2, 2}, 1);
  const ir::TensorId c = g.add_constant(ir::DType::Float32, {2, 1}, to_bytes(random_f32({2, 1}, 2)));
  const ir::TensorId x = add_inputs(g, {v}).front();
  const ir::TensorId y = g.add_op("concat", {c, x}, make_attrs({{"axis", int64_t{1}}})).front();
  const ir::TensorId loss = g.add_op("reduce_sum", {y}, {}).front();
  const ir::TensorId dx = ir::autodiff(g, loss, std::vector<ir::TensorId>{x}).front();
  expect_equal(evaluate(g, {dx}).front(), f32({2, 2}, {1, 1, 1, 1}), "d sum(concat(c, x)) / dx");
  size_t slices = 0;
  for (const ir::Op& op : g.ops()) slices += op.schema->name == "slice";
  EXPECT_EQ(slices, 1u) << "the constant needs no slice of dy";
}

TEST(Concat, DtypesShapesAndAxisAreChecked) {
  const OpError d = expect_build_error("concat", {random_f32({2, 2}, 1), i32({2, 2}, {1, 2, 3, 4})}, {},
                                       ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(d.message, HasSubstr("all inputs must have one dtype"));

  for (const ir::Shape& other : {ir::Shape{2, 3}, ir::Shape{3, 3, 1}, ir::Shape{3}}) {
    SCOPED_TRACE(::testing::PrintToString(other));
    const OpError s = expect_build_error("concat", {random_f32({2, 2}, 1), random_f32(other, 2)},
                                         make_attrs({{"axis", int64_t{0}}}), ir::ErrorCode::ShapeMismatch);
    EXPECT_THAT(s.message, HasSubstr("input 1 must have input 0's shape except along axis 0"));
  }

  for (const int64_t axis : {2, -3}) {
    const OpError a = expect_build_error("concat", {random_f32({2, 2}, 1), random_f32({2, 2}, 2)},
                                         make_attrs({{"axis", axis}}), ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(a.message, HasSubstr("axis " + std::to_string(axis) + " must be in [-2, 2) for rank 2"));
  }

  const OpError r = expect_build_error("concat", {f32({}, {1}), f32({}, {2})}, {}, ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(r.message, HasSubstr("inputs must have rank >= 1"));

  const OpError n = op_error("concat", std::vector<Value>(65, f32({1}, {1})));
  EXPECT_EQ(n.code, ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(n.message, HasSubstr("op 'concat' takes 1 to 64 inputs, got 65"));
}

// --- split ---------------------------------------------------------------------------

TEST(Split, OutputsAreTheSlicesAtCumulativeSizes) {
  const Value x = random_f32({2, 6, 2}, 1);
  const std::vector<Value> parts = run_op("split", {x}, make_attrs({{"axis", int64_t{-2}}, {"sizes", Ints{1, 3, 2}}}));
  ASSERT_EQ(parts.size(), 3u);
  const Ints sizes{1, 3, 2};
  int64_t start = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    SCOPED_TRACE(k);
    expect_equal(parts[k], slice_reference({start}, {start + sizes[k]}, {1})({x}), "part");
    start += sizes[k];
  }
}

// split is linear: with loss = sum(part0 * R0) + sum(part2 * R2) the gradient is exactly
// concat(R0, 0, R2) (part 1 has no gradient, so zeros stand in for it).
TEST(Split, GradientIsTheConcatOfThePartsGradients) {
  ir::Graph g;
  const ir::TensorId x = add_inputs(g, {random_f32({3, 5}, 1)}).front();
  const std::vector<ir::TensorId> parts =
      g.add_op("split", {x}, make_attrs({{"axis", int64_t{1}}, {"sizes", Ints{2, 1, 2}}}));
  const Value r0 = random_f32({3, 2}, 2), r2 = random_f32({3, 2}, 3);
  auto weighted = [&](ir::TensorId part, const Value& r) {
    const ir::TensorId c = g.add_constant(ir::DType::Float32, r.shape, to_bytes(r));
    return g.add_op("reduce_sum", {g.add_op("mul", {part, c}, {}).front()}, {}).front();
  };
  const ir::TensorId loss = g.add_op("add", {weighted(parts[0], r0), weighted(parts[2], r2)}, {}).front();
  const ir::TensorId dx = ir::autodiff(g, loss, std::vector<ir::TensorId>{x}).front();
  const Value expected = concat_reference(1)({r0, f32({3, 1}, {0, 0, 0}), r2});
  expect_equal(evaluate(g, {dx}).front(), expected, "d loss / dx");
}

TEST(Split, SizesAndAxisAreChecked) {
  for (const Ints& sizes : {Ints{2, 2}, Ints{5, 0}, Ints{}, Ints{6, -1}}) {
    SCOPED_TRACE(::testing::PrintToString(sizes));
    const OpError e = expect_build_error("split", {random_f32({5, 2}, 1)}, make_attrs({{"sizes", sizes}}),
                                         ir::ErrorCode::ShapeMismatch);
    EXPECT_THAT(e.message, HasSubstr("must be >= 1 each and sum to 5 (dim 0)"));
  }
  const OpError a =
      expect_build_error("split", {random_f32({5, 2}, 1)}, make_attrs({{"axis", int64_t{2}}, {"sizes", Ints{1, 1}}}),
                         ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(a.message, HasSubstr("axis 2 must be in [-2, 2) for rank 2"));
}

// --- slice ---------------------------------------------------------------------------

struct SliceCase {
  ir::Shape x;
  Ints starts, ends, axes;
};

TEST(Slice, ForwardAndGradientMatchDoubleReference) {
  const SliceCase cases[] = {
      {{5, 4}, {1}, {3}, {0}},               // rows 1..2
      {{5, 4}, {1, 2}, {4, 4}, {}},          // axes empty: 0, 1
      {{5, 4}, {-3}, {-1}, {1}},             // negative: from the end
      {{5, 4}, {-100}, {1000}, {0}},         // clamped to the whole dim
      {{2, 3, 4}, {1, 0}, {3, 1}, {-1, 0}},  // negative axis, any order
      {{2, 3, 4}, {2}, {3}, {1}},            // a middle dim
      {{6}, {5}, {6}, {}},                   // the last element
      {{2, 3}, {}, {}, {}},                  // nothing sliced: a copy
  };
  uint32_t seed = 1;
  for (const SliceCase& c : cases) {
    SCOPED_TRACE(testing::Message() << "x " << ::testing::PrintToString(c.x) << " starts "
                                    << ::testing::PrintToString(c.starts) << " ends "
                                    << ::testing::PrintToString(c.ends) << " axes "
                                    << ::testing::PrintToString(c.axes));
    expect_gradients("slice", {random_f32(c.x, seed++)}, slice_attrs(c.starts, c.ends, c.axes),
                     slice_reference(c.starts, c.ends, c.axes));
  }
}

TEST(Slice, WorksOnEveryDtype) {
  expect_equal(run_op1("slice", {i32({2, 3}, {1, 2, 3, 4, 5, 6})}, slice_attrs({1}, {3}, {1})),
               i32({2, 2}, {2, 3, 5, 6}), "int32");
  expect_equal(run_op1("slice", {u8({4}, {7, 8, 9, 255})}, slice_attrs({-2}, {4}, {})), u8({2}, {9, 255}), "uint8");
}

TEST(Slice, BadAttributesAreRejected) {
  struct Case {
    Ints starts, ends, axes;
    const char* rule;
  };
  const Case cases[] = {
      {{2}, {2}, {0}, "the slice [2, 2) of dim 0 (size 4) is empty"},
      {{-1}, {1}, {1}, "the slice [-1, 1) of dim 1 (size 3) is empty"},
      {{5}, {9}, {0}, "the slice [5, 9) of dim 0 (size 4) is empty"},
      {{0, 0}, {1, 1}, {1, -1}, "axes [1,-1] must be distinct dims in [-rank, rank)"},
      {{0}, {1}, {2}, "axes [2] must be distinct dims in [-rank, rank)"},
      {{0, 0}, {1}, {0, 1}, "starts, ends and axes (empty = 0, 1, ...) must have one length"},
      {{0, 0, 0}, {1, 1, 1}, {}, "starts, ends and axes (empty = 0, 1, ...) must have one length, within the rank"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.rule);
    const OpError e = expect_build_error("slice", {random_f32({4, 3}, 1)}, slice_attrs(c.starts, c.ends, c.axes),
                                         ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.message, HasSubstr(c.rule));
  }
}

// --- slice_grad ------------------------------------------------------------------------

TEST(SliceGrad, PutsDyIntoZeros) {
  const Value dy = random_f32({2, 2, 3}, 1);
  const Value y = run_op1("slice_grad", {dy}, make_attrs({{"shape", Ints{3, 2, 5}}, {"starts", Ints{1, 0, 2}}}));
  ASSERT_EQ(y.shape, (ir::Shape{3, 2, 5}));
  // Its slice at the box is dy, and everything else is zero.
  expect_equal(slice_reference({1, 0, 2}, {3, 2, 5}, {})({y}), dy, "the box");
  double outside = 0;
  for (double v : y.data) outside += std::abs(v);
  for (double v : dy.data) outside -= std::abs(v);
  EXPECT_NEAR(outside, 0.0, 1e-6) << "non-zeros outside the box";
}

TEST(SliceGrad, DyMustFitInsideTheShape) {
  for (const Ints& starts : {Ints{2, 0}, Ints{-1, 0}, Ints{0}}) {
    SCOPED_TRACE(::testing::PrintToString(starts));
    const OpError e =
        expect_build_error("slice_grad", {random_f32({2, 2}, 1)},
                           make_attrs({{"shape", Ints{3, 2}}, {"starts", starts}}), ir::ErrorCode::ShapeMismatch);
    EXPECT_THAT(e.message, HasSubstr("must lie inside shape [3,2]"));
  }
}

}  // namespace
}  // namespace plexus::ops::test
