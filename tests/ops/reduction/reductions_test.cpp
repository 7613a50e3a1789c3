// Reductions (core/ops/reduction/reductions.cpp): reduce_sum (float32, int32) and reduce_mean
// (float32) over axes (empty = all, negative allowed) with keepdims; argmax along one axis
// (first maximum wins) -> int32.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <limits>

#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

// Which dims `axes` reduces (empty = all), in the test's own terms.
std::vector<bool> reduced_dims(const ir::Shape& shape, const Ints& axes) {
  const auto rank = static_cast<int64_t>(shape.size());
  std::vector<bool> reduced(shape.size(), axes.empty());
  for (int64_t a : axes) reduced[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  return reduced;
}

// Sum (or mean) over the reduced dims in double.
Reference reduce_reference(Ints axes, bool keepdims, bool mean) {
  return [axes, keepdims, mean](const std::vector<Value>& in) {
    const Value& x = in[0];
    const std::vector<bool> reduced = reduced_dims(x.shape, axes);
    ir::Shape kept, out_shape;
    for (size_t d = 0; d < x.shape.size(); ++d) {
      kept.push_back(reduced[d] ? 1 : x.shape[d]);
      if (!reduced[d] || keepdims) out_shape.push_back(kept.back());
    }
    Value y{x.dtype, out_shape, std::vector<double>(static_cast<size_t>(ir::numel(kept)), 0.0)};
    std::vector<int64_t> index(x.shape.size(), 0);
    for (double v : x.data) {
      int64_t dst = 0;
      for (size_t d = 0; d < x.shape.size(); ++d) dst = dst * kept[d] + (reduced[d] ? 0 : index[d]);
      y.data[static_cast<size_t>(dst)] += v;
      for (size_t d = x.shape.size(); d-- > 0;) {
        if (++index[d] < x.shape[d]) break;
        index[d] = 0;
      }
    }
    const double count = static_cast<double>(x.data.size()) / static_cast<double>(y.data.size());
    for (double& v : y.data) {
      if (mean) v /= count;
      if (x.dtype == ir::DType::Int32) v = static_cast<int32_t>(static_cast<uint32_t>(static_cast<int64_t>(v)));
    }
    return y;
  };
}

// Index of the first maximum along `axis`, in double.
Reference argmax_reference(int64_t axis, bool keepdims) {
  return [axis, keepdims](const std::vector<Value>& in) {
    const Value& x = in[0];
    const auto rank = static_cast<int64_t>(x.shape.size());
    const auto a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < a; ++d) outer *= x.shape[d];
    for (size_t d = a + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
    const int64_t len = x.shape[a];
    ir::Shape out_shape;
    for (size_t d = 0; d < x.shape.size(); ++d) {
      if (d != a) out_shape.push_back(x.shape[d]);
      if (d == a && keepdims) out_shape.push_back(1);
    }
    Value y{ir::DType::Int32, out_shape, {}};
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        auto at = [&](int64_t k) { return x.data[static_cast<size_t>((o * len + k) * inner + i)]; };
        int64_t best = 0;
        for (int64_t k = 1; k < len; ++k) {
          if (at(k) > at(best)) best = k;  // strictly greater: an equal later value never wins
        }
        y.data.push_back(static_cast<double>(best));
      }
    }
    return y;
  };
}

ir::Attributes reduce_attrs(const Ints& axes, bool keepdims) {
  return make_attrs({{"axes", axes}, {"keepdims", int64_t{keepdims}}});
}

struct ReduceCase {
  ir::Shape shape;
  Ints axes;
};

const ReduceCase kReduceCases[] = {
    {{2, 3, 4}, {0}},  {{2, 3, 4}, {1}},       {{2, 3, 4}, {2}},     {{2, 3, 4}, {-1}},
    {{2, 3, 4}, {-3}}, {{2, 3, 4}, {0, 2}},    {{2, 3, 4}, {-1, 0}}, {{2, 3, 4}, {1, 2}},
    {{2, 3, 4}, {}},   {{2, 3, 4}, {0, 1, 2}}, {{5}, {0}},           {{5}, {}},
    {{}, {}},          {{4, 30}, {1}},         {{3, 1, 4}, {1}},     {{2, 3, 1, 2}, {0, -2, 3}},
};

std::string describe(const ReduceCase& c, bool keepdims) {
  return ::testing::PrintToString(c.shape) + " axes " + ::testing::PrintToString(c.axes) +
         (keepdims ? " keepdims" : "");
}

TEST(ReduceSum, ForwardAndGradientOverAxes) {
  for (const ReduceCase& c : kReduceCases) {
    for (const bool keepdims : {false, true}) {
      SCOPED_TRACE(describe(c, keepdims));
      expect_gradients("reduce_sum", {random_f32(c.shape, 1)}, reduce_attrs(c.axes, keepdims),
                       reduce_reference(c.axes, keepdims, false));
    }
  }
}

TEST(ReduceMean, ForwardAndGradientOverAxes) {
  for (const ReduceCase& c : kReduceCases) {
    for (const bool keepdims : {false, true}) {
      SCOPED_TRACE(describe(c, keepdims));
      expect_gradients("reduce_mean", {random_f32(c.shape, 2)}, reduce_attrs(c.axes, keepdims),
                       reduce_reference(c.axes, keepdims, true));
    }
  }
}

// Reductions whose innermost rows each sum into one output element, above all "keep one
// middle axis" (outer N, kept C, inner H*W contiguous: NCHW -> C, the conv bias gradient):
// rows shorter than, equal to and longer than the kernel's 32 partial sums, with and without
// a tail (inner not a multiple of 8 or 32), C = 1, N = 1, rank 3 and 4, trailing and full.
const ReduceCase kRowSumCases[] = {
    {{3, 5, 13}, {0, 2}},      {{2, 3, 100}, {0, 2}},     {{4, 2, 32}, {0, 2}},       {{2, 4, 33}, {0, 2}},
    {{2, 1, 7, 9}, {0, 2, 3}}, {{1, 4, 5, 7}, {0, 2, 3}}, {{3, 6, 5, 5}, {0, 2, 3}},  {{1, 1, 3, 3}, {0, 2, 3}},
    {{2, 3, 1, 1}, {0, 2, 3}}, {{5, 67}, {1}},            {{3, 2, 40}, {-1, -3}},     {{700}, {}},
};

TEST(ReduceSum, RowSumsForwardAndGradient) {
  for (const ReduceCase& c : kRowSumCases) {
    for (const bool keepdims : {false, true}) {
      SCOPED_TRACE(describe(c, keepdims));
      expect_gradients("reduce_sum", {random_f32(c.shape, 6)}, reduce_attrs(c.axes, keepdims),
                       reduce_reference(c.axes, keepdims, false));
      expect_gradients("reduce_mean", {random_f32(c.shape, 7)}, reduce_attrs(c.axes, keepdims),
                       reduce_reference(c.axes, keepdims, true));
    }
  }
}

TEST(ReduceSum, RowSumsInt32AreExact) {
  for (const ReduceCase& c : kRowSumCases) {
    SCOPED_TRACE(describe(c, false));
    std::vector<double> v = random_values(ir::numel(c.shape), -2e9, 2e9, 8);  // sums wrap around
    for (double& e : v) e = std::trunc(e);
    const Value x = i32(c.shape, v);
    expect_equal(run_op1("reduce_sum", {x}, reduce_attrs(c.axes, false)), reduce_reference(c.axes, false, false)({x}),
                 "int32 reduce_sum");
  }
}

// The conv bias gradient of seed 002's CNN at batch 16 ([16,32,26,26] -> [32]; 10816 terms per
// channel): within the forward tolerance of the double sum (~42 float32 roundings per
// channel, each <= 6e-8 * |partial sum| <= 6e-8 * ~100), and the same bits on every run.
TEST(ReduceSum, ConvBiasGradientShapeIsAccurateAndDeterministic) {
  const Value x = random_f32({16, 32, 26, 26}, 9);
  const ir::Attributes attrs = reduce_attrs({0, 2, 3}, false);
  expect_forward("reduce_sum", {x}, attrs, reduce_reference({0, 2, 3}, false, false));
  expect_forward("reduce_mean", {x}, attrs, reduce_reference({0, 2, 3}, false, true));
  expect_equal(run_op1("reduce_sum", {x}, attrs), run_op1("reduce_sum", {x}, attrs), "second run");
}

TEST(ReduceSum, DefaultsReduceEverythingToAScalar) {
  const Value y = run_op1("reduce_sum", {f32({2, 2}, {1, 2, 3, 4.5})});
  expect_equal(y, f32({}, {10.5}), "reduce_sum of [2,2]");
  expect_equal(run_op1("reduce_mean", {f32({2, 2}, {1, 2, 3, 6})}), f32({}, {3}), "reduce_mean of [2,2]");
}

TEST(ReduceSum, KeepdimsShapesByHand) {
  const Value x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_equal(run_op1("reduce_sum", {x}, reduce_attrs({1}, true)), f32({2, 1}, {6, 15}), "axis 1 keepdims");
  expect_equal(run_op1("reduce_sum", {x}, reduce_attrs({0}, false)), f32({3}, {5, 7, 9}), "axis 0");
  expect_equal(run_op1("reduce_sum", {x}, reduce_attrs({}, true)), f32({1, 1}, {21}), "all keepdims");
  expect_equal(run_op1("reduce_mean", {x}, reduce_attrs({-1}, false)), f32({2}, {2, 5}), "mean axis -1");
}

TEST(ReduceSum, Int32IsExactAndWrapsAround) {
  for (const ReduceCase& c : kReduceCases) {
    for (const bool keepdims : {false, true}) {
      SCOPED_TRACE(describe(c, keepdims));
      std::vector<double> v = random_values(ir::numel(c.shape), -1e6, 1e6, 3);
      for (double& e : v) e = std::trunc(e);
      const Value x = i32(c.shape, v);
      expect_equal(run_op1("reduce_sum", {x}, reduce_attrs(c.axes, keepdims)),
                   reduce_reference(c.axes, keepdims, false)({x}), "int32 reduce_sum");
    }
  }
  expect_equal(run_op1("reduce_sum", {i32({3}, {INT32_MAX, 1, 1})}), i32({}, {INT32_MIN + 1.0}), "overflow wraps");
  expect_equal(run_op1("reduce_sum", {i32({2, 2}, {INT32_MIN, 5, -1, 7})}, reduce_attrs({0}, false)),
               i32({2}, {INT32_MAX, 12}), "underflow wraps");
}

TEST(ReduceMean, Int32IsRejected) {
  const OpError e = op_error("reduce_mean", {i32({2}, {1, 2})});
  EXPECT_EQ(e.stage, Stage::Build);
  EXPECT_EQ(e.code, ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(e.message, HasSubstr("op 'reduce_mean'"));
  EXPECT_THAT(e.message, HasSubstr("input 0 must be float32"));
}

TEST(Reductions, AxisOutOfRangeIsRejected) {
  for (const char* op : {"reduce_sum", "reduce_mean"}) {
    for (const int64_t axis : {3, -4}) {
      SCOPED_TRACE(testing::Message() << op << " axis " << axis);
      const OpError e = op_error(op, {random_f32({2, 3, 4}, 1)}, reduce_attrs({0, axis}, false));
      EXPECT_EQ(e.stage, Stage::Build);
      EXPECT_EQ(e.code, ir::ErrorCode::InvalidArgument);
      EXPECT_THAT(e.message, HasSubstr(std::string("op '") + op + "'"));
      EXPECT_THAT(e.message, HasSubstr("axis " + std::to_string(axis) + " is out of range for rank 3"));
    }
  }
}

// --- argmax --------------------------------------------------------------------------

TEST(Argmax, FirstMaximumWinsOnTies) {
  const double inf = std::numeric_limits<double>::infinity();
  expect_equal(run_op1("argmax", {f32({4}, {1, 3, 3, 2})}), i32({}, {1}), "tie between 1 and 2");
  expect_equal(run_op1("argmax", {f32({3}, {5, 5, 5})}), i32({}, {0}), "all equal");
  expect_equal(run_op1("argmax", {f32({3}, {-inf, -inf, -7})}), i32({}, {2}), "-inf");
  expect_equal(run_op1("argmax", {f32({3}, {-0.0, 0.0, -1})}), i32({}, {0}), "-0 == 0");
  expect_equal(run_op1("argmax", {i32({5}, {-3, 9, 2, 9, 9})}), i32({}, {1}), "int32 ties");
  expect_equal(run_op1("argmax", {f32({2, 3}, {1, 7, 7, 4, 4, 0})}, make_attrs({{"axis", int64_t{0}}})),
               i32({3}, {1, 0, 0}), "axis 0 ties");
}

TEST(Argmax, MatchesReferenceOnEveryAxis) {
  // Values drawn from {0, 1, 2} so ties are frequent.
  for (const ir::Shape& shape : {ir::Shape{7}, ir::Shape{3, 4}, ir::Shape{2, 5, 3}, ir::Shape{2, 1, 3, 4}}) {
    std::vector<double> v = random_values(ir::numel(shape), 0.0, 3.0, 4);
    for (double& e : v) e = std::floor(e);
    const auto rank = static_cast<int64_t>(shape.size());
    for (int64_t axis = -rank; axis < rank; ++axis) {
      for (const bool keepdims : {false, true}) {
        SCOPED_TRACE(testing::Message() << ::testing::PrintToString(shape) << " axis " << axis << " keepdims "
                                        << keepdims);
        const ir::Attributes attrs = make_attrs({{"axis", axis}, {"keepdims", int64_t{keepdims}}});
        for (const Value& x : {f32(shape, v), i32(shape, v)}) {
          expect_equal(run_op1("argmax", {x}, attrs), argmax_reference(axis, keepdims)({x}), "argmax");
        }
      }
    }
  }
}

TEST(Argmax, DefaultsToLastAxisWithoutKeepdims) {
  const Value x = random_f32({3, 5}, 5);
  expect_equal(run_op1("argmax", {x}), argmax_reference(-1, false)({x}), "default attrs");
}

TEST(Argmax, AxisOutOfRangeIsRejected) {
  const OpError e = op_error("argmax", {random_f32({2, 3}, 1)}, make_attrs({{"axis", int64_t{2}}}));
  EXPECT_EQ(e.stage, Stage::Build);
  EXPECT_EQ(e.code, ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("op 'argmax'"));
  EXPECT_THAT(e.message, HasSubstr("axis 2 is out of range"));
}

TEST(Argmax, ScalarInputIsRejected) {
  const OpError e = op_error("argmax", {f32({}, {1})});
  EXPECT_EQ(e.stage, Stage::Build);
  EXPECT_EQ(e.code, ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(e.message, HasSubstr("op 'argmax'"));
  EXPECT_THAT(e.message, HasSubstr("input must have rank >= 1"));
}

TEST(Argmax, BoolIsRejected) {
  const OpError e = op_error("argmax", {typed(ir::DType::Bool, {2}, {1, 0})});
  EXPECT_EQ(e.code, ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(e.message, HasSubstr("op 'argmax'"));
  EXPECT_THAT(e.message, HasSubstr("input 0 must be a number"));
}

}  // namespace
}  // namespace plexus::ops::test
