// Conversions (core/ops/elementwise/conversions.cpp): cast(x; dtype) between every pair of
// dtypes. float -> integer truncates toward zero and saturates at the target's range,
// NaN -> 0; integer -> integer saturates; int32 -> float32 rounds to nearest even; to float16
// rounds to nearest even with overflow to inf; to bool is nonzero. Only float32 -> float32
// carries a gradient.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>

#include "core/ir/autodiff.h"
#include "core/ir/dtype_dispatch.h"
#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

ir::Attributes to(ir::DType t) { return make_attrs({{"dtype", int64_t{static_cast<int32_t>(t)}}}); }

// The documented rule in double: NaN -> 0, truncate toward zero, clamp to [lo, hi].
double saturate_trunc(double v, double lo, double hi) {
  if (std::isnan(v)) return 0.0;
  return std::clamp(std::trunc(v), lo, hi);
}

TEST(Cast, Float32ToInt32TruncatesAndSaturates) {
  // 2147483520 is the largest float32 below 2^31; 2147483648 (= 2^31) is not an int32.
  const Value x = f32({16}, {2.7, -2.7, 0.5, -0.5, -0.0, 1e-30, 123456.9, -123456.9, 3e9, -3e9, kNaN, kInf, -kInf,
                             2147483520.0, 2147483648.0, -2147483648.0});
  expect_equal(run_op1("cast", {x}, to(ir::DType::Int32)),
               i32({16}, {2, -2, 0, 0, 0, 0, 123456, -123456, INT32_MAX, INT32_MIN, 0, INT32_MAX, INT32_MIN,
                          2147483520.0, INT32_MAX, INT32_MIN}),
               "float32 -> int32");
}

TEST(Cast, Float32ToUint8TruncatesAndSaturates) {
  const Value x = f32({12}, {0.9, 1.5, 254.99, 255.0, 255.9, 256.0, 1e10, -0.5, -1.5, -1e10, kNaN, -kInf});
  expect_equal(run_op1("cast", {x}, to(ir::DType::UInt8)), u8({12}, {0, 1, 254, 255, 255, 255, 255, 0, 0, 0, 0, 0}),
               "float32 -> uint8");
}

TEST(Cast, RandomFloatsMatchTheRule) {
  const Value x = f32({200}, random_values(200, -400.0, 400.0, 5));
  expect_equal(run_op1("cast", {x}, to(ir::DType::Int32)),
               i32({200}, map_unary(x, [](double v) { return saturate_trunc(v, INT32_MIN, INT32_MAX); }).data),
               "float32 -> int32");
  expect_equal(run_op1("cast", {x}, to(ir::DType::UInt8)),
               u8({200}, map_unary(x, [](double v) { return saturate_trunc(v, 0, 255); }).data), "float32 -> uint8");
}

TEST(Cast, Int32ToFloat32RoundsToNearestEven) {
  // 2^24 + 1 and 2^24 + 3 are not float32s: they round to the even neighbours.
  const Value x = i32({6}, {0, -5, 16777217, 16777219, INT32_MAX, INT32_MIN});
  expect_equal(run_op1("cast", {x}, to(ir::DType::Float32)),
               f32({6}, {0, -5, 16777216, 16777220, 2147483648.0, -2147483648.0}), "int32 -> float32");
}

TEST(Cast, IntegerToIntegerSaturates) {
  expect_equal(run_op1("cast", {i32({6}, {0, 7, 255, 256, -1, INT32_MIN})}, to(ir::DType::UInt8)),
               u8({6}, {0, 7, 255, 255, 0, 0}), "int32 -> uint8");
  expect_equal(run_op1("cast", {u8({3}, {0, 128, 255})}, to(ir::DType::Int32)), i32({3}, {0, 128, 255}),
               "uint8 -> int32");
  expect_equal(run_op1("cast", {u8({3}, {0, 128, 255})}, to(ir::DType::Float32)), f32({3}, {0, 128, 255}),
               "uint8 -> float32");
}

TEST(Cast, SameDtypeIsIdentity) {
  const Value f = f32({4}, {1.5, -0.0, kInf, kNaN});
  expect_equal(run_op1("cast", {f}, to(ir::DType::Float32)), f, "float32");
  const Value i = i32({3}, {INT32_MIN, 0, INT32_MAX});
  expect_equal(run_op1("cast", {i}, to(ir::DType::Int32)), i, "int32");
  const Value u = u8({2}, {0, 255});
  expect_equal(run_op1("cast", {u}, to(ir::DType::UInt8)), u, "uint8");
}

TEST(Cast, Float32ToFloat32PassesTheGradientThrough) {
  expect_gradients("cast", {random_f32({3, 4}, 6)}, to(ir::DType::Float32),
                   [](const std::vector<Value>& in) { return in[0]; });
}

TEST(Cast, IntegerCastBlocksTheGradient) {
  // loss(x) = sum(cast<float32>(cast<int32>(x))): piecewise constant, and autodiff must not
  // invent a gradient through the int32 tensor.
  ir::Graph g;
  const ir::TensorId x = add_inputs(g, {random_f32({3}, 7)}).front();
  const ir::TensorId i = g.add_op("cast", {x}, to(ir::DType::Int32)).front();
  const ir::TensorId f = g.add_op("cast", {i}, to(ir::DType::Float32)).front();
  const ir::TensorId loss = g.add_op("reduce_sum", {f}, {}).front();
  try {
    ir::autodiff(g, loss, std::vector<ir::TensorId>{x});
    ADD_FAILURE() << "autodiff found a gradient through an int32 cast";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("autodiff: the loss 'reduce_sum#2' does not depend on 'in0'"));
  }
}

// Values of each source dtype covering its edges (and, for floats, NaN, infinities, ties).
std::vector<double> edge_values(ir::DType t) {
  switch (t) {
    case ir::DType::Float32:
    case ir::DType::Float16:
      return {0.0, -0.0, 1.5, -2.7, 127.9, -128.9, 300.5, -300.5, 65504, 70000, 3e9, -3e9, kNaN, kInf, -kInf,
              1.0 + 0x1p-11};
    case ir::DType::Int32:
      return {0, 1, -1, 127, -128, 255, 256, 2049, 65504, 70000, INT32_MAX, INT32_MIN};
    case ir::DType::UInt8:
      return {0, 1, 127, 128, 255};
    case ir::DType::Int8:
      return {0, 1, -1, 127, -128};
    case ir::DType::UInt32:
      return {0, 1, 255, 256, 2049, 70000, 2147483648.0, 4294967295.0};
    case ir::DType::Bool:
      return {0, 1};
  }
  return {};
}

// The documented rule in double, for a value exactly representable in its source dtype.
double cast_rule(double v, ir::DType to) {
  return ir::visit_any(to, [&](auto tag) -> double {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, ir::Boolean>) {
      return v != 0 ? 1.0 : 0.0;  // NaN != 0
    } else if constexpr (std::is_same_v<T, ir::Float16>) {
      // A source value is a float, or an int that is a float or overflows float16 anyway.
      return ir::half_to_float(ir::float_to_half(static_cast<float>(v)));
    } else if constexpr (std::is_same_v<T, float>) {
      return static_cast<float>(v);
    } else {
      return saturate_trunc(v, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()) + 0.0;  // no -0
    }
  });
}

TEST(Cast, EveryPairOfDtypesFollowsTheRule) {
  for (ir::DType from : ir::kAllDTypes) {
    const std::vector<double> values = edge_values(from);
    const Value x = typed(from, {static_cast<int64_t>(values.size())}, values);
    for (ir::DType target : ir::kAllDTypes) {
      SCOPED_TRACE(std::string(ir::dtype_name(from)) + " -> " + std::string(ir::dtype_name(target)));
      std::vector<double> expected;
      for (double v : x.data) expected.push_back(cast_rule(v, target));
      const Value y = run_op1("cast", {x}, to(target));
      expect_equal(y, typed(target, x.shape, expected), "cast");
    }
  }
}

TEST(Cast, ToFloat16RoundsToNearestEvenAndOverflowsToInf) {
  // Ties (1 + 2^-11, 1 + 3 * 2^-11, 2^-25, 3 * 2^-25) go to the even neighbour; 65520 is the
  // first value that rounds to inf; 2^-24 is the smallest subnormal.
  const Value x = f32({10}, {1.0 + 0x1p-11, 1.0 + 3 * 0x1p-11, 0x1p-25, 3 * 0x1p-25, 0x1p-24, 65519.0, 65520.0, -1e6,
                             kNaN, -0.0});
  const Value y = run_op1("cast", {x}, to(ir::DType::Float16));
  const std::vector<double> expected{1.0, 1.0 + 0x1p-9, 0.0, 0x1p-23, 0x1p-24, 65504.0, kInf, -kInf, kNaN, -0.0};
  ASSERT_EQ(y.dtype, ir::DType::Float16);
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_TRUE(y.data[i] == expected[i] || (std::isnan(y.data[i]) && std::isnan(expected[i]))) << i << ": " << y.data[i];
    EXPECT_EQ(std::signbit(y.data[i]), std::signbit(expected[i])) << i;
  }
}

TEST(Cast, InvalidDtypeIsRejected) {
  for (const int64_t dtype : {int64_t{0}, int64_t{8}, int64_t{-1}, (int64_t{1} << 32) + 1}) {
    SCOPED_TRACE(dtype);
    const OpError e = op_error("cast", {f32({1}, {1})}, make_attrs({{"dtype", dtype}}));
    EXPECT_EQ(e.stage, Stage::Build);
    EXPECT_EQ(e.code, ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.message, HasSubstr("op 'cast'"));
    EXPECT_THAT(e.message, HasSubstr("dtype " + std::to_string(dtype) + " is not a valid dtype"));
  }
}

TEST(Cast, DtypeAttributeIsRequired) {
  const OpError e = op_error("cast", {f32({1}, {1})});
  EXPECT_EQ(e.code, ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("op 'cast': required attribute 'dtype'"));
}

}  // namespace
}  // namespace plexus::ops::test
