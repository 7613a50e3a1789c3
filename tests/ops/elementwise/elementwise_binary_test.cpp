// Binary elementwise ops (core/ops/elementwise/elementwise_binary.cpp): add, sub, mul, div with numpy
// broadcasting over float32, float16 (computed in float32, rounded once), int32, int8, uint8
// and uint32 (integers wrap around; integer division by zero is a run error), and equal
// (any dtype, uint8 result).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <limits>
#include <ostream>
#include <tuple>

#include "core/ir/dtype_dispatch.h"
#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

// The float op in double precision.
double apply(const std::string& op, double x, double y) {
  if (op == "add") return x + y;
  if (op == "sub") return x - y;
  if (op == "mul") return x * y;
  return x / y;
}

// The int32 op, computed exactly in int64 and wrapped to 32 bits (two's complement);
// int32 division truncates toward zero, as the hardware does.
double apply_int32(const std::string& op, double xd, double yd) {
  const auto x = static_cast<int64_t>(xd), y = static_cast<int64_t>(yd);
  int64_t r = 0;
  if (op == "add") r = x + y;
  if (op == "sub") r = x - y;
  if (op == "mul") r = x * y;
  if (op == "div") r = x / y;
  return static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(r))));
}

Reference binary_reference(const std::string& op) {
  return [op](const std::vector<Value>& in) {
    if (in[0].dtype == ir::DType::Int32) {
      return broadcast_binary(in[0], in[1], ir::DType::Int32,
                              [op](double x, double y) { return apply_int32(op, x, y); });
    }
    return broadcast_binary(in[0], in[1], ir::DType::Float32, [op](double x, double y) { return apply(op, x, y); });
  };
}

struct BroadcastCase {
  const char* name;
  ir::Shape a, b;
};

void PrintTo(const BroadcastCase& c, std::ostream* os) {
  *os << ir::shape_string(c.a) << " with " << ir::shape_string(c.b);
}

const BroadcastCase kBroadcastCases[] = {
    {"SameShape", {3, 4}, {3, 4}},
    {"ScalarRight", {3, 4}, {}},
    {"ScalarLeft", {}, {2, 5}},
    {"BothScalar", {}, {}},
    {"Row", {3, 4}, {4}},
    {"RowLeft", {1, 4}, {3, 4}},
    {"Column", {3, 4}, {3, 1}},
    {"ColumnTimesRow", {3, 1}, {1, 4}},
    {"Rank3", {2, 1, 4}, {3, 1}},
    {"Rank3BothWays", {2, 3, 1}, {1, 3, 4}},
    {"Rank3Middle", {2, 3, 4}, {1, 3, 1}},
    {"UnitInnerDims", {3, 1}, {1, 1}},  // both operands step 0 in the innermost loop
    {"Rank4", {2, 1, 3, 1}, {2, 1, 2}},
};

using BinaryCase = std::tuple<std::string, BroadcastCase>;

class Broadcasting : public ::testing::TestWithParam<BinaryCase> {};

TEST_P(Broadcasting, Float32ForwardAndGradientsMatchDoubleReference) {
  const auto& [op, c] = GetParam();
  const Value a = random_f32(c.a, 11);
  // div: |b| >= 0.5 keeps a/b and its gradients (-a/b^2) well conditioned.
  const Value b = op == "div" ? random_f32(c.b, 12, -2.0, 2.0, 0.5) : random_f32(c.b, 12);
  expect_gradients(op, {a, b}, {}, binary_reference(op));
}

TEST_P(Broadcasting, Int32MatchesExactReference) {
  const auto& [op, c] = GetParam();
  auto ints = [](const ir::Shape& shape, uint32_t seed, bool nonzero) {
    std::vector<double> v = random_values(ir::numel(shape), -1000.0, 1000.0, seed, nonzero ? 1.0 : 0.0);
    for (double& x : v) x = std::trunc(x);
    return i32(shape, v);
  };
  const Value a = ints(c.a, 21, false), b = ints(c.b, 22, op == "div");
  expect_equal(run_op1(op, {a, b}), binary_reference(op)({a, b}), op + " int32");
}

INSTANTIATE_TEST_SUITE_P(Ops, Broadcasting,
                         ::testing::Combine(::testing::Values("add", "sub", "mul", "div"),
                                            ::testing::ValuesIn(kBroadcastCases)),
                         [](const ::testing::TestParamInfo<BinaryCase>& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param).name;
                         });

TEST(ElementwiseBinary, BroadcastValuesByHand) {
  // [N,1] + [1,M]: out[i][j] = a[i] + b[j]
  expect_equal(run_op1("add", {f32({2, 1}, {10, 20}), f32({1, 3}, {1, 2, 3})}), f32({2, 3}, {11, 12, 13, 21, 22, 23}),
               "[2,1] + [1,3]");
  // row broadcast: [2,3] - [3]
  expect_equal(run_op1("sub", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {1, 1, 2})}), f32({2, 3}, {0, 1, 1, 3, 4, 4}),
               "[2,3] - [3]");
  // scalar on the left: 12 / [2,3] (int32)
  expect_equal(run_op1("div", {i32({}, {12}), i32({2}, {3, -5})}), i32({2}, {4, -2}), "12 / [3,-5]");
}

TEST(ElementwiseBinary, Int32WrapsAround) {
  const double max = INT32_MAX, min = INT32_MIN;
  expect_equal(run_op1("add", {i32({2}, {max, min}), i32({2}, {1, -1})}), i32({2}, {min, max}), "add overflow");
  expect_equal(run_op1("sub", {i32({2}, {min, max}), i32({2}, {1, -1})}), i32({2}, {max, min}), "sub overflow");
  expect_equal(run_op1("mul", {i32({3}, {65536, 46341, min}), i32({3}, {65536, 46341, -1})}),
               i32({3}, {0, 46341.0 * 46341.0 - 4294967296.0, min}), "mul overflow");
  expect_equal(run_op1("div", {i32({1}, {min}), i32({1}, {-1})}), i32({1}, {min}), "INT32_MIN / -1");
}

TEST(ElementwiseBinary, Int32DivisionTruncatesTowardZero) {
  expect_equal(run_op1("div", {i32({4}, {7, -7, 7, -7}), i32({4}, {2, 2, -2, -2})}), i32({4}, {3, -3, -3, 3}),
               "int32 div");
}

TEST(ElementwiseBinary, Int32DivisionByZeroIsARunError) {
  for (const bool broadcast : {false, true}) {
    SCOPED_TRACE(broadcast ? "broadcast divisor" : "same shape");
    const Value b = broadcast ? i32({}, {0}) : i32({3}, {1, 0, 2});
    const OpError e = op_error("div", {i32({3}, {4, 5, 6}), b});
    EXPECT_EQ(e.stage, Stage::Run);
    EXPECT_EQ(e.code, ir::ErrorCode::Runtime);
    EXPECT_THAT(e.message, HasSubstr("op 'div'"));
    EXPECT_THAT(e.message, HasSubstr("int32 division by zero"));
  }
}

TEST(ElementwiseBinary, Float32DivisionByZeroFollowsIeee) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  expect_equal(run_op1("div", {f32({3}, {1, -1, 0}), f32({3}, {0, 0, 0})}), f32({3}, {inf, -inf, nan}), "x / 0");
}

// A bool tensor (what equal gives, as PopXL's ops.equal).
Value boolean(ir::Shape shape, std::vector<double> data) { return typed(ir::DType::Bool, std::move(shape), std::move(data)); }

TEST(ElementwiseBinary, EqualComparesEveryDtypeWithBroadcasting) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  expect_equal(run_op1("equal", {f32({5}, {1, 2, nan, -0.0, 1e-7}), f32({5}, {1, 3, nan, 0.0, 0.0})}),
               boolean({5}, {1, 0, 0, 1, 0}), "float32 (NaN != NaN, -0 == 0)");
  expect_equal(run_op1("equal", {i32({3, 1}, {0, 1, 2}), i32({1, 3}, {0, 1, 2})}),
               boolean({3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1}), "int32 [3,1] vs [1,3]");
  expect_equal(run_op1("equal", {u8({2, 2}, {0, 255, 7, 7}), u8({}, {7})}), boolean({2, 2}, {0, 0, 1, 1}),
               "uint8 vs scalar");
}

TEST(ElementwiseBinary, EqualMatchesReferenceOnRandomData) {
  // Equal elements on about half the positions, with row broadcasting.
  std::vector<double> a = random_values(12, 0, 4, 41), b = random_values(4, 0, 4, 42);
  for (double& v : a) v = std::floor(v);
  for (double& v : b) v = std::floor(v);
  const Value x = f32({3, 4}, a), y = f32({4}, b);
  expect_equal(run_op1("equal", {x, y}),
               broadcast_binary(x, y, ir::DType::Bool, [](double p, double q) { return p == q ? 1.0 : 0.0; }),
               "equal [3,4] vs [4]");
}

TEST(ElementwiseBinary, MixedDtypesAreRejected) {
  for (const char* op : {"add", "sub", "mul", "div", "equal"}) {
    SCOPED_TRACE(op);
    const OpError e = op_error(op, {f32({2}, {1, 2}), i32({2}, {1, 2})});
    EXPECT_EQ(e.stage, Stage::Build);
    EXPECT_EQ(e.code, ir::ErrorCode::DTypeMismatch);
    EXPECT_THAT(e.message, HasSubstr(std::string("op '") + op + "'"));
    EXPECT_THAT(e.message, HasSubstr("both inputs must have the same dtype"));
  }
}

TEST(ElementwiseBinary, IncompatibleShapesAreRejected) {
  for (const char* op : {"add", "sub", "mul", "div", "equal"}) {
    SCOPED_TRACE(op);
    const OpError e = op_error(op, {random_f32({2, 3}, 1), random_f32({3, 2}, 2)});
    EXPECT_EQ(e.stage, Stage::Build);
    EXPECT_EQ(e.code, ir::ErrorCode::ShapeMismatch);
    EXPECT_THAT(e.message, HasSubstr(std::string("op '") + op + "' with inputs (float32[2,3], float32[3,2])"));
    EXPECT_THAT(e.message, HasSubstr("shapes are not broadcast-compatible"));
  }
}

TEST(ElementwiseBinary, ArithmeticOnBoolIsRejected) {
  const OpError e = op_error("add", {typed(ir::DType::Bool, {2}, {1, 0}), typed(ir::DType::Bool, {2}, {1, 1})});
  EXPECT_EQ(e.stage, Stage::Build);
  EXPECT_EQ(e.code, ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(e.message, HasSubstr("op 'add' with inputs (bool[2], bool[2])"));
  EXPECT_THAT(e.message, HasSubstr("input 0 must be a number (float32, float16, int32, int8, uint8 or uint32), not bool"));
}

}  // namespace
}  // namespace plexus::ops::test

namespace plexus::ops::test {
namespace {

// add_ (PopXL's x += y): in place, y broadcast to x's shape; the output is x's storage.
// The integer op on T computed exactly in int64 and wrapped to T's width (two's complement);
// division truncates toward zero.
template <class T>
double apply_wrapped(const std::string& op, double xd, double yd) {
  const auto x = static_cast<int64_t>(xd), y = static_cast<int64_t>(yd);
  int64_t r = x / y;
  if (op == "add") r = x + y;
  if (op == "sub") r = x - y;
  if (op == "mul") r = static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y));
  return static_cast<double>(static_cast<T>(static_cast<uint64_t>(r)));
}

TEST(ElementwiseBinary, SmallIntegerTypesWrapAroundAndDivideTowardZero) {
  const std::vector<std::tuple<ir::DType, std::vector<double>, std::vector<double>>> cases = {
      {ir::DType::Int8, {127, -128, -7, 100, -128, 3}, {1, -1, 2, 3, 1, -2}},
      {ir::DType::UInt8, {255, 0, 7, 200, 128, 3}, {1, 1, 2, 3, 2, 200}},
      {ir::DType::UInt32, {4294967295.0, 0, 7, 3000000000.0, 2147483648.0, 3}, {1, 1, 2, 3, 2, 4000000000.0}},
  };
  for (const auto& c : cases) {
    // Named, not structured bindings: clang 14 cannot capture those in the lambda below.
    const ir::DType dtype = std::get<0>(c);
    const std::vector<double>& xs = std::get<1>(c);
    const std::vector<double>& ys = std::get<2>(c);
    const Value x = typed(dtype, {6}, xs), y = typed(dtype, {6}, ys);
    for (const std::string op : {"add", "sub", "mul", "div"}) {
      SCOPED_TRACE(op + " " + std::string(ir::dtype_name(dtype)));
      std::vector<double> expected;
      for (size_t i = 0; i < xs.size(); ++i) {
        expected.push_back(ir::visit_dtype<int8_t, uint8_t, uint32_t>(dtype, [&](auto tag) {
          return apply_wrapped<typename decltype(tag)::type>(op, xs[i], ys[i]);
        }));
      }
      expect_equal(run_op1(op, {x, y}), typed(dtype, {6}, expected), op);
    }
  }
}

TEST(ElementwiseBinary, SmallIntegerDivisionByZeroIsARunErrorNamingTheDtype) {
  const OpError e = op_error("div", {typed(ir::DType::Int8, {2}, {1, 2}), typed(ir::DType::Int8, {2}, {1, 0})});
  EXPECT_EQ(e.stage, Stage::Run);
  EXPECT_EQ(e.code, ir::ErrorCode::Runtime);
  EXPECT_THAT(e.message, HasSubstr("op 'div': int8 division by zero"));
}

TEST(ElementwiseBinary, Float16IsComputedInFloat32AndRoundedOncePerElement) {
  // 1 + 2^-11 is a tie (even: 1), 1 + 3 * 2^-12 rounds up to 1 + 2^-10, 65504 + 16 is the
  // tie to inf, 2^-24 / 2 is the tie to 0; mul and div round the float32 result once.
  const Value x = f16({5}, {1, 1, 65504, 0x1p-24, 3});
  const Value y = f16({5}, {0x1p-11, 3 * 0x1p-12, 16, 2, 7});
  for (const std::string op : {"add", "sub", "mul", "div"}) {
    SCOPED_TRACE(op);
    std::vector<double> expected;
    for (size_t i = 0; i < x.data.size(); ++i) {
      expected.push_back(static_cast<float>(apply(op, x.data[i], y.data[i])));  // exact in float32 here
    }
    expect_equal(run_op1(op, {x, y}), f16({5}, expected), op);
  }
  const Value sum = run_op1("add", {x, y});
  EXPECT_EQ(sum.data[0], 1.0);
  EXPECT_EQ(sum.data[1], 1.0 + 0x1p-10);
  EXPECT_EQ(sum.data[2], std::numeric_limits<double>::infinity());
  EXPECT_EQ(run_op1("div", {x, y}).data[3], 0.0);
  EXPECT_EQ(run_op1("div", {x, y}).data[4], 0.428466796875);  // 3/7 rounded to float16
}

TEST(ElementwiseBinary, NegAndEqualCoverTheNewDtypes) {
  expect_equal(run_op1("neg", {typed(ir::DType::Int8, {3}, {-128, 5, 0})}), typed(ir::DType::Int8, {3}, {-128, -5, 0}),
               "int8 neg wraps");
  expect_equal(run_op1("neg", {typed(ir::DType::UInt32, {2}, {1, 0})}), typed(ir::DType::UInt32, {2}, {4294967295.0, 0}),
               "uint32 neg wraps");
  expect_equal(run_op1("neg", {f16({2}, {65504, -0.5})}), f16({2}, {-65504, 0.5}), "float16 neg");
  expect_equal(run_op1("equal", {f16({3}, {1, 0.5, -0.0}), f16({3}, {1, 0.25, 0.0})}), boolean({3}, {1, 0, 1}),
               "float16 equal (-0 == 0)");
  expect_equal(run_op1("equal", {typed(ir::DType::Bool, {4}, {0, 1, 1, 0}), typed(ir::DType::Bool, {1}, {1})}),
               boolean({4}, {0, 1, 1, 0}), "bool equal");
  expect_equal(run_op1("equal", {typed(ir::DType::Int8, {2}, {-1, 2}), typed(ir::DType::Int8, {2}, {-1, 3})}),
               boolean({2}, {1, 0}), "int8 equal");
}

TEST(ElementwiseBinary, Float16MixedWithFloat32IsRejected) {
  const OpError e = op_error("add", {f16({2}, {1, 2}), f32({2}, {1, 2})});
  EXPECT_EQ(e.code, ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(e.message, HasSubstr("op 'add' with inputs (float16[2], float32[2]): both inputs must have the same dtype"));
}

TEST(ElementwiseBinary, AddInPlaceBroadcastsYOntoX) {
  expect_equal(run_op1("add_", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {10, 20, 30})}),
               f32({2, 3}, {11, 22, 33, 14, 25, 36}), "add_ float32");
  expect_equal(run_op1("add_", {i32({2}, {1, 2}), i32({}, {5})}), i32({2}, {6, 7}), "add_ int32");
  const OpError e = op_error("add_", {f32({3}, {1, 2, 3}), f32({2, 3}, {1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(e.code, ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(e.message, ::testing::HasSubstr("y must broadcast to x's shape"));
}

// copy_var_update_ (PopXL's var_updates.copy_var_update_): x <- y in place, whatever x held.
TEST(ElementwiseBinary, CopyVarUpdateOverwritesXWithYBroadcast) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  expect_equal(run_op1("copy_var_update_", {f32({2, 2}, {nan, inf, -inf, 1}), f32({2}, {10, 20})}),
               f32({2, 2}, {10, 20, 10, 20}), "copy_var_update_ float32 over non-finite values");
  expect_equal(run_op1("copy_var_update_", {i32({2}, {1, 2}), i32({}, {-5})}), i32({2}, {-5, -5}),
               "copy_var_update_ int32");
  const OpError shape = op_error("copy_var_update_", {f32({3}, {1, 2, 3}), f32({2, 3}, {1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(shape.code, ir::ErrorCode::ShapeMismatch);
  const OpError dtype = op_error("copy_var_update_", {f32({2}, {1, 2}), i32({2}, {1, 2})});
  EXPECT_EQ(dtype.code, ir::ErrorCode::DTypeMismatch);
}

}  // namespace
}  // namespace plexus::ops::test
