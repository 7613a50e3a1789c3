// float16 ops computed in float32 (core/ops/common/float32_compute.cpp): matmul,
// batch_matmul, conv2d and its gradient ops, reduce_sum and reduce_mean on float16 give,
// bit for bit, the float32 kernel's result on the float16 inputs' values rounded once to
// float16 (float32 accumulation, as the IPU's partials); mixed or unsupported dtypes are
// refused naming the op and the dtype.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/ir/float16.h"
#include "core/ir/graph.h"
#include "core/ops/kernel_def.h"
#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

Value random_f16(ir::Shape shape, uint32_t seed) {
  const int64_t n = ir::numel(shape);
  return f16(std::move(shape), random_values(n, -2.0, 2.0, seed));
}

// The same values as float32 (exact: every half is a float).
Value widened(const Value& v) { return f32(v.shape, v.data); }

// The float16 op's output equals the float32 op's on the widened inputs, rounded to float16.
void expect_float32_then_rounded(const std::string& op, const std::vector<Value>& halves,
                                 const ir::Attributes& attrs = {}) {
  std::vector<Value> floats;
  for (const Value& h : halves) floats.push_back(widened(h));
  const Value wide = run_op1(op, floats, attrs);
  const Value half = run_op1(op, halves, attrs);
  ASSERT_EQ(half.dtype, ir::DType::Float16) << op;
  expect_equal(half, f16(wide.shape, wide.data), op + " on float16");
}

TEST(Float32Compute, MatmulOfFloat16IsTheFloat32ProductRoundedOnce) {
  expect_float32_then_rounded("matmul", {random_f16({7, 33}, 1), random_f16({33, 5}, 2)});
  expect_float32_then_rounded("matmul", {random_f16({33, 7}, 3), random_f16({5, 33}, 4)},
                              make_attrs({{"transpose_a", int64_t{1}}, {"transpose_b", int64_t{1}}}));
  expect_float32_then_rounded("batch_matmul", {random_f16({3, 4, 9}, 5), random_f16({3, 9, 2}, 6)});
}

TEST(Float32Compute, MatmulAccumulatesInFloat32) {
  // 4096 products 1 * 1: a float16 accumulator stops at 2048 (2048 + 1 rounds to 2048).
  const Value a = f16({1, 4096}, std::vector<double>(4096, 1.0)), b = f16({4096, 1}, std::vector<double>(4096, 1.0));
  expect_equal(run_op1("matmul", {a, b}), f16({1, 1}, {4096}), "sum of 4096 ones");
}

TEST(Float32Compute, Conv2dAndItsGradientsOfFloat16AreFloat32RoundedOnce) {
  const ir::Attributes attrs = make_attrs({{"stride", std::vector<int64_t>{1, 2}}, {"padding", std::vector<int64_t>{1, 0}}});
  const Value x = random_f16({2, 3, 6, 7}, 7), w = random_f16({4, 3, 3, 3}, 8), b = random_f16({4}, 9);
  expect_float32_then_rounded("conv2d", {x, w, b}, attrs);
  const Value dy = random_f16(run_op1("conv2d", {x, w}, attrs).shape, 10);
  ir::Attributes gi = attrs, gw = attrs;
  gi.set("input_shape", std::vector<int64_t>{2, 3, 6, 7});
  gw.set("weight_shape", std::vector<int64_t>{4, 3, 3, 3});
  expect_float32_then_rounded("conv2d_grad_input", {dy, w}, gi);
  expect_float32_then_rounded("conv2d_grad_weight", {x, dy}, gw);
}

TEST(Float32Compute, ReductionsOfFloat16AccumulateInFloat32) {
  const ir::Attributes rows = make_attrs({{"axes", std::vector<int64_t>{1}}});
  expect_float32_then_rounded("reduce_sum", {random_f16({5, 300}, 11)}, rows);
  expect_float32_then_rounded("reduce_mean", {random_f16({5, 300}, 12)}, rows);
  expect_equal(run_op1("reduce_sum", {f16({4096}, std::vector<double>(4096, 1.0))}), f16({}, {4096}),
               "sum of 4096 ones");
  expect_equal(run_op1("argmax", {f16({2, 3}, {0.5, 2, -1, 3, 3, 65504})}), i32({2}, {1, 2}), "argmax");
}

TEST(Float32Compute, MixedAndUnsupportedDtypesAreRefusedNamingTheOpAndDtype) {
  const OpError mixed = expect_build_error("matmul", {random_f16({2, 3}, 1), random_f32({3, 2}, 2)}, {},
                                           ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(mixed.message, HasSubstr("op 'matmul' with inputs (float16[2,3], float32[3,2])"));
  EXPECT_THAT(mixed.message, HasSubstr("input 1 must have input 0's dtype (float16)"));
  const OpError ints = expect_build_error("conv2d", {i32({1, 1, 2, 2}, {1, 2, 3, 4}), i32({1, 1, 1, 1}, {1})}, {},
                                          ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(ints.message, HasSubstr("input 0 must be float32 or float16"));
  const OpError relu = expect_build_error("relu", {random_f16({2}, 3)}, {}, ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(relu.message, HasSubstr("op 'relu' with inputs (float16[2]): input 0 must be float32"));
  const OpError mean = expect_build_error("reduce_mean", {i32({2}, {1, 2})}, {}, ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(mean.message, HasSubstr("op 'reduce_mean' with inputs (int32[2]): input 0 must be float32 or float16"));
}

// The scratch the memory plan reserves for an op on `dtype` inputs of these shapes.
size_t planned_scratch(const std::string& op, ir::DType dtype, const std::vector<ir::Shape>& shapes,
                       const ir::Attributes& attrs = {}) {
  ir::Graph g;
  std::vector<ir::TensorId> inputs;
  for (size_t i = 0; i < shapes.size(); ++i) {
    inputs.push_back(g.stream(g.add_h2d_stream("in" + std::to_string(i), dtype, shapes[i])).tensor);
  }
  const ir::TensorId y = g.add_op(op, inputs, attrs).front();
  return scratch_bytes(g, g.op(g.tensor(y).producer));
}

TEST(Float32Compute, TheFloat32CopiesAreInTheOpsPlannedScratch) {
  // matmul [7,33] x [33,5]: copies of 924, 660 and 140 bytes, each rounded up to 64.
  EXPECT_EQ(planned_scratch("matmul", ir::DType::Float32, {{7, 33}, {33, 5}}), 0u);
  EXPECT_EQ(planned_scratch("matmul", ir::DType::Float16, {{7, 33}, {33, 5}}), 960u + 704u + 192u);
  EXPECT_EQ(planned_scratch("reduce_sum", ir::DType::Float16, {{5, 300}}), 6016u + 64u);  // 6000 in, a scalar out
  // conv2d: its float32 kernel's own scratch follows the copies of x, w and y.
  const size_t f32 = planned_scratch("conv2d", ir::DType::Float32, {{2, 3, 6, 7}, {4, 3, 3, 3}});
  const size_t copies = 1024u + 448u + 640u;  // x 1008 bytes, w 432, y [2,4,4,5] 640, rounded up to 64
  EXPECT_EQ(planned_scratch("conv2d", ir::DType::Float16, {{2, 3, 6, 7}, {4, 3, 3, 3}}), copies + f32);
}

}  // namespace
}  // namespace plexus::ops::test
