#include "core/ir/autodiff.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "core/ir/error.h"
#include "core/session/session.h"

namespace plexus::ir {
namespace {

using ::testing::HasSubstr;

std::vector<std::byte> f32(const std::vector<float>& values) {
  std::vector<std::byte> out(values.size() * sizeof(float));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// Runs the graph once and returns tensor `t` (added as a d2h stream) as floats.
std::vector<float> evaluate(Graph g, TensorId t) {
  const StreamId s = g.add_d2h_stream("result", t);
  session::Session session(g, {});
  std::vector<float> out(static_cast<size_t>(numel(g.tensor(t).shape)));
  const runtime::HostArray array{s, out.data(), DType::Float32, g.tensor(t).shape};
  session.run({}, std::span(&array, 1));
  return out;
}

TEST(Autodiff, SumsContributionsOfATensorUsedTwice) {
  Graph g;
  const TensorId x = g.add_variable("x", DType::Float32, {3}, f32({1.0f, -2.0f, 0.5f}));
  const TensorId y = g.add_op("add", {g.add_op("mul", {x, x}, {}).front(), x}, {}).front();  // x^2 + x
  const TensorId loss = g.add_op("reduce_sum", {y}, {}).front();
  const std::vector<TensorId> grads = autodiff(g, loss, std::vector<TensorId>{x});
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(g.tensor(grads[0]).shape, (Shape{3}));
  EXPECT_EQ(evaluate(g, grads[0]), (std::vector<float>{3.0f, -3.0f, 2.0f}));  // 2x + 1
}

// A tensor of block a read by an op of block a and by an op of block b (a residual across
// a stage boundary): its gradient's first contribution comes from block b, and the sum of
// its contributions used to follow that first part into block b, reading block a's part
// against the direction of the backward pass (found by samples/char_gpt with 2 stages).
// The sum belongs to the op that produced the tensor: block a.
TEST(Autodiff, TheSumOfAnOutputsContributionsJoinsItsProducersBlock) {
  Graph g;
  const TensorId w = g.add_variable("w", DType::Float32, {2}, f32({1.0f, -2.0f}));
  g.begin_block("a", -1);
  const TensorId t = g.add_op("relu", {w}, {}).front();
  const TensorId u = g.add_op("neg", {t}, {}).front();
  g.end_block();
  g.begin_block("b", -1);
  const TensorId loss = g.add_op("reduce_sum", {g.add_op("add", {t, u}, {}).front()}, {}).front();
  g.end_block();
  const size_t forward_ops = g.num_ops();
  autodiff(g, loss, std::vector<TensorId>{w});
  int sums = 0;
  for (size_t o = forward_ops; o < g.num_ops(); ++o) {
    const Op& op = g.op(static_cast<OpId>(o));
    if (op.schema->name != "add") continue;
    ++sums;
    EXPECT_EQ(op.block, g.op(g.tensor(t).producer).block) << op.name << " sums t's gradient parts";
  }
  EXPECT_EQ(sums, 1);
}

TEST(Autodiff, GradientOfAnIntermediateTensorAndOfTheLossItself) {
  Graph g;
  const TensorId x = g.add_variable("x", DType::Float32, {2}, f32({1.0f, 2.0f}));
  const TensorId h = g.add_op("mul", {x, x}, {}).front();
  const TensorId loss = g.add_op("reduce_sum", {h}, {}).front();
  const std::vector<TensorId> grads = autodiff(g, loss, std::vector<TensorId>{h, loss});
  EXPECT_EQ(evaluate(g, grads[0]), (std::vector<float>{1.0f, 1.0f}));
  EXPECT_EQ(evaluate(g, grads[1]), (std::vector<float>{1.0f}));
}

TEST(Autodiff, OnlyRequestedPathsGetGradientOps) {
  Graph g;
  const TensorId x = g.add_variable("x", DType::Float32, {2, 3}, f32(std::vector<float>(6, 1.0f)));
  const TensorId w = g.add_variable("w", DType::Float32, {3, 4}, f32(std::vector<float>(12, 1.0f)));
  const TensorId loss = g.add_op("reduce_sum", {g.add_op("matmul", {x, w}, {}).front()}, {}).front();
  const size_t before = g.num_ops();
  autodiff(g, loss, std::vector<TensorId>{w});
  size_t matmuls = 0;
  for (size_t o = before; o < g.num_ops(); ++o) matmuls += g.op(static_cast<OpId>(o)).schema->name == "matmul";
  EXPECT_EQ(matmuls, 1u);  // dW only; no dX for an input nobody asked about
}

TEST(Autodiff, LossThatDoesNotDependOnATensorIsAnError) {
  Graph g;
  const TensorId x = g.add_variable("x", DType::Float32, {1}, f32({1.0f}));
  const TensorId unused = g.add_variable("unused", DType::Float32, {1}, f32({1.0f}));
  const TensorId loss = g.add_op("neg", {x}, {}).front();
  try {
    autodiff(g, loss, std::vector<TensorId>{unused});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("does not depend on 'unused'"));
  }
}

// Two losses computed before the first autodiff: each autodiff gives its own gradient
// (d sum(x * x) = 2x, d sum(3x) = 3). A loss computed after an autodiff would run in the
// weight update, after the gradient ops reading it: refused, naming the loss.
TEST(Autodiff, EveryLossIsComputedBeforeTheFirstAutodiff) {
  Graph g;
  const TensorId x = g.add_variable("x", DType::Float32, {2}, f32({1.0f, -2.0f}));
  const TensorId square = g.add_op("reduce_sum", {g.add_op("mul", {x, x}, {}).front()}, {}).front();
  const TensorId three = g.add_constant(DType::Float32, {}, f32({3.0f}));
  const TensorId triple = g.add_op("reduce_sum", {g.add_op("mul", {x, three}, {}).front()}, {}).front();
  const TensorId d_square = autodiff(g, square, std::vector<TensorId>{x}).front();
  const TensorId d_triple = autodiff(g, triple, std::vector<TensorId>{x}).front();
  EXPECT_EQ(evaluate(g, d_square), (std::vector<float>{2.0f, -4.0f}));
  EXPECT_EQ(evaluate(g, d_triple), (std::vector<float>{3.0f, 3.0f}));
  const TensorId late = g.add_op("neg", {square}, {}).front();
  try {
    autodiff(g, late, std::vector<TensorId>{x});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("the loss '" + g.tensor(late).name + "' was computed after an earlier autodiff"));
  }
}

TEST(Autodiff, IntegerPathsCarryNoGradient) {
  Graph g;
  const TensorId x = g.add_variable("x", DType::Float32, {2, 2}, f32({1, 2, 3, 4}));
  const TensorId idx = g.add_op("argmax", {x}, {}).front();
  Attributes to_float;
  to_float.set("dtype", int64_t{1});
  const TensorId loss = g.add_op("reduce_sum", {g.add_op("cast", {idx}, to_float).front()}, {}).front();
  try {
    autodiff(g, loss, std::vector<TensorId>{x});
    FAIL();
  } catch (const Error& e) {
    // cast from int32 carries no gradient, so x gets none: the error says so.
    EXPECT_THAT(e.what(), HasSubstr("does not depend on 'x'"));
  }
}

TEST(Autodiff, OpWithoutGradientOnThePathIsNamed) {
  Graph g;
  const TensorId x = g.add_variable("x", DType::Float32, {2}, f32({1, 2}));
  const TensorId dy = g.add_variable("dy", DType::Float32, {2}, f32({1, 1}));
  const TensorId loss = g.add_op("reduce_sum", {g.add_op("relu_grad", {x, dy}, {}).front()}, {}).front();
  try {
    autodiff(g, loss, std::vector<TensorId>{x});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("op 'relu_grad#0' lies between the loss and a requested tensor"));
  }
}

TEST(Autodiff, IntegerTensorsHaveNoGradient) {
  Graph g;
  const TensorId i = g.add_variable("i", DType::Int32, {1}, std::vector<std::byte>(4));
  const TensorId x = g.add_variable("x", DType::Float32, {1}, f32({1.0f}));
  try {
    autodiff(g, x, std::vector<TensorId>{i});
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("only float32 tensors have gradients"));
  }
}

}  // namespace
}  // namespace plexus::ir
