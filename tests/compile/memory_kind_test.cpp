#include "core/compile/memory_kind.h"

#include <gtest/gtest.h>

#include <string>

#include "core/ir/autodiff.h"
#include "core/ir/error.h"
#include "tests/runtime/test_graphs.h"

namespace plexus::compile {
namespace {

namespace testing = runtime::testing;

using testing::f32;

/// loss = reduce_sum(x * w + c) (x from a stream, w a variable, c a constant), its gradient
/// dw, AdamW on w with state m, v, step, and an update op scaling dw.
struct AdamwGraph {
  ir::Graph g;
  ir::TensorId x, w, c, prod, loss, grad, m, v, step, scaled;
  AdamwGraph() {
    x = g.stream(g.add_h2d_stream("x", ir::DType::Float32, {4})).tensor;
    w = g.add_variable("w", ir::DType::Float32, {4}, std::vector<std::byte>(16));
    c = g.add_constant(ir::DType::Float32, {}, f32({1.0f}));
    prod = g.add_op("mul", {x, w}, {}).front();
    loss = g.add_op("reduce_sum", {g.add_op("add", {prod, c}, {}).front()}, {}).front();
    const std::vector<ir::TensorId> wrt{w};
    grad = ir::autodiff(g, loss, wrt).front();
    m = g.add_variable("m", ir::DType::Float32, {4}, std::vector<std::byte>(16));
    v = g.add_variable("v", ir::DType::Float32, {4}, std::vector<std::byte>(16));
    step = g.add_variable("step", ir::DType::Float32, {}, std::vector<std::byte>(4));
    scaled = g.add_op("neg", {grad}, {}).front();
    g.add_op("adamw_", {w, scaled, m, v, step}, {});
  }
  std::string kind(ir::TensorId t) const {
    return std::string(memory_kind_name(memory_kind(g, g.storage_root(t), optimizer_state_roots(g))));
  }
};

TEST(MemoryKind, EachTensorOfATrainingGraphHasItsKind) {
  const AdamwGraph a;
  EXPECT_EQ(a.kind(a.w), "variables");
  EXPECT_EQ(a.kind(a.c), "variables");
  EXPECT_EQ(a.kind(a.x), "stream_slots");
  EXPECT_EQ(a.kind(a.prod), "activations");
  EXPECT_EQ(a.kind(a.loss), "activations");
  EXPECT_EQ(a.kind(a.grad), "gradients");    // autodiff's backward op
  EXPECT_EQ(a.kind(a.scaled), "gradients");  // an update op computing from the gradient
  EXPECT_EQ(a.kind(a.m), "optimizer_state");
  EXPECT_EQ(a.kind(a.v), "optimizer_state");
  EXPECT_EQ(a.kind(a.step), "optimizer_state");
}

TEST(MemoryKind, OptimizerStateIsWhatOptimizerOpsMarkAsState) {
  const AdamwGraph a;
  EXPECT_EQ(optimizer_state_roots(a.g), (std::set<ir::TensorId>{a.m, a.v, a.step}));
  ir::Graph plain;
  plain.add_op("neg", {plain.add_variable("w", ir::DType::Float32, {2}, std::vector<std::byte>(8))}, {});
  EXPECT_TRUE(optimizer_state_roots(plain).empty());
}

TEST(MemoryKind, NamesAreTheReportsKeysInOrder) {
  std::string names;
  for (MemoryKind k : memory_kinds()) names += std::string(memory_kind_name(k)) + " ";
  EXPECT_EQ(names, "variables activations gradients optimizer_state stream_slots scratch ");
  EXPECT_EQ(static_cast<size_t>(memory_kinds().back()), kNumMemoryKinds - 1);
}

TEST(MemoryKind, AnUnknownTensorIsNotFound) {
  const AdamwGraph a;
  try {
    memory_kind(a.g, 1000, {});
    FAIL() << "no error";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::NotFound);
  }
}

}  // namespace
}  // namespace plexus::compile
