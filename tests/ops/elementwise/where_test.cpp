// where (core/ops/elementwise/where.cpp): where(cond uint8|int32, a, b) = a where cond != 0 else b,
// numpy broadcasting of all three (numpy.where); gradients dy masked into a and b, summed
// over their broadcast dims.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

Value where_reference(const std::vector<Value>& in) {
  const Value &cond = in[0], &a = in[1], &b = in[2];
  const ir::Shape shape = broadcast_shape(cond.shape, broadcast_shape(a.shape, b.shape));
  const std::vector<double> c = broadcast_to(cond, shape), x = broadcast_to(a, shape), y = broadcast_to(b, shape);
  Value out{a.dtype, shape, std::vector<double>(c.size())};
  for (size_t i = 0; i < c.size(); ++i) out.data[i] = c[i] != 0 ? x[i] : y[i];
  return out;
}

// A uint8 (or int32) condition of `shape` with a fixed pattern of zeros and non-zeros.
Value pattern(ir::DType dtype, const ir::Shape& shape) {
  std::vector<double> v(static_cast<size_t>(ir::numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = (i * 7 % 5) < 2 ? 0.0 : static_cast<double>(i % 3 + 1);
  return dtype == ir::DType::UInt8 ? u8(shape, v) : i32(shape, v);
}

struct WhereCase {
  ir::Shape cond, a, b;
};

TEST(Where, ForwardAndGradientsMatchDoubleReference) {
  const WhereCase cases[] = {
      {{3, 4}, {3, 4}, {3, 4}},  // no broadcast
      {{3, 1}, {1, 4}, {3, 4}},  // every input broadcast somewhere
      {{4}, {2, 3, 4}, {}},      // scalar b: its gradient is a sum over everything
      {{2, 3, 4}, {4}, {3, 1}},  // cond decides the shape
      {{}, {2, 2}, {2, 2}},      // scalar cond
  };
  uint32_t seed = 1;
  for (const WhereCase& c : cases) {
    for (const ir::DType cond_dtype : {ir::DType::UInt8, ir::DType::Int32}) {
      SCOPED_TRACE(testing::Message() << "cond " << ::testing::PrintToString(c.cond) << " a "
                                      << ::testing::PrintToString(c.a) << " b " << ::testing::PrintToString(c.b)
                                      << " cond dtype " << static_cast<int>(cond_dtype));
      expect_gradients("where", {pattern(cond_dtype, c.cond), random_f32(c.a, seed), random_f32(c.b, seed + 1)}, {},
                       where_reference);
      seed += 2;
    }
  }
}

// Attention's causal mask: scores [B, T, T] where j <= i, -1e9 elsewhere.
TEST(Where, CausalMask) {
  const int64_t t = 4;
  std::vector<double> lower;
  for (int64_t i = 0; i < t; ++i) {
    for (int64_t j = 0; j < t; ++j) lower.push_back(j <= i ? 1 : 0);
  }
  const Value mask = u8({t, t}, lower), scores = random_f32({2, t, t}, 3);
  const Value y = run_op1("where", {mask, scores, f32({}, {-1e9})});
  expect_equal(y, where_reference({mask, scores, f32({}, {-1e9})}), "masked scores");
  // The gradient of the scores is dy where the mask is set (b = -5 keeps the reference's
  // finite differences well conditioned; -1e9 would swamp them in cancellation).
  GradCheckOptions options;
  options.wrt = {1};
  expect_gradients("where", {mask, scores, f32({}, {-5})}, {}, where_reference, options);
}

TEST(Where, Int32Values) {
  expect_equal(run_op1("where", {u8({2}, {0, 1}), i32({2, 2}, {1, 2, 3, 4}), i32({}, {-7})}),
               i32({2, 2}, {-7, 2, -7, 4}), "int32 a and b");
}

TEST(Where, DtypesAreChecked) {
  const Value a = random_f32({2}, 1), b = random_f32({2}, 2);
  const OpError c = expect_build_error("where", {f32({2}, {0, 1}), a, b}, {}, ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(c.message, HasSubstr("cond (input 0) must be bool, uint8 or int32"));
  const OpError m =
      expect_build_error("where", {u8({2}, {0, 1}), a, i32({2}, {1, 2})}, {}, ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(m.message, HasSubstr("a and b (inputs 1 and 2) must have one dtype"));
  // Any dtype selects (by element size): uint8 values, float16 values under a bool cond.
  expect_equal(run_op1("where", {u8({2}, {0, 1}), u8({2}, {1, 2}), u8({2}, {3, 4})}), u8({2}, {3, 2}), "uint8");
  expect_equal(run_op1("where", {typed(ir::DType::Bool, {3}, {1, 0, 1}), f16({3}, {0.5, -1, 65504}), f16({1}, {-0.25})}),
               f16({3}, {0.5, -0.25, 65504}), "float16 under bool");
}

TEST(Where, ShapesMustBroadcast) {
  for (const WhereCase& c : {WhereCase{{3}, {2, 4}, {4}}, WhereCase{{2, 4}, {3}, {1}}, WhereCase{{4}, {4}, {2}}}) {
    SCOPED_TRACE(::testing::PrintToString(c.cond) + " " + ::testing::PrintToString(c.a) + " " +
                 ::testing::PrintToString(c.b));
    const OpError e =
        expect_build_error("where", {pattern(ir::DType::UInt8, c.cond), random_f32(c.a, 1), random_f32(c.b, 2)}, {},
                           ir::ErrorCode::ShapeMismatch);
    EXPECT_THAT(e.message, HasSubstr("cond, a and b are not broadcast-compatible"));
  }
}

}  // namespace
}  // namespace plexus::ops::test
