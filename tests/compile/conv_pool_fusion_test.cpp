// The conv -> relu -> max-pool rewrite (core/compile/conv_pool_fusion.h): which convs fuse,
// the fused ops' inputs, outputs and attributes, the ops removed with their stages, and the
// program's one RunOp action per fused op, whose intermediates get no buffer.
#include "core/compile/conv_pool_fusion.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/compile/passes.h"
#include "core/compile/program.h"
#include "core/ops/kernel_def.h"
#include "tests/runtime/small_cnn.h"

namespace plexus::compile {
namespace {

namespace testing = runtime::testing;

using testing::CnnRecipe;

/// The op of `type` in g (the first one).
ir::OpId find(const ir::Graph& g, const char* type) {
  for (size_t o = 0; o < g.num_ops(); ++o) {
    if (g.op(static_cast<ir::OpId>(o)).schema->name == type) return static_cast<ir::OpId>(o);
  }
  return -1;
}

ir::TensorId out(const ir::Graph& g, const char* type) { return g.op(find(g, type)).outputs[0]; }

/// Runs the rewrite on g (placed on one stage); returns the convs fused.
size_t fuse(ir::Graph& g) {
  std::vector<int32_t> op_stage = place(g, {}).op_stage;
  const size_t made = fuse_conv_pool_groups(g, op_stage);
  EXPECT_EQ(op_stage, place(g, {}).op_stage) << "the removed ops' stages dropped";
  return made;
}

/// A copy of g, rewritten; `made` receives the convs fused.
ir::Graph fused(const ir::Graph& g, size_t* made = nullptr) {
  ir::Graph copy = g;
  const size_t n = fuse(copy);
  if (made) *made = n;
  return copy;
}

/// The `<op>_relu` ops of g (the relu-epilogue rewrite's, relu_fusion.h).
size_t relu_fused_ops(const ir::Graph& g) {
  return static_cast<size_t>(
      std::count_if(g.ops().begin(), g.ops().end(), [](const ir::Op& op) { return op.schema->name.ends_with("_relu"); }));
}

TEST(ConvPoolFusion, BothSeedOrdersFuseTheirForwardAndGradientOps) {
  for (const bool pool_first : {false, true}) {
    SCOPED_TRACE(pool_first ? "conv -> pool -> relu (seed 003)" : "conv -> relu -> pool (seed 002)");
    const testing::Cnn m = testing::build_cnn({.pool_first = pool_first});
    const ir::Graph& g = m.g;
    const ir::OpId conv = find(g, "conv2d"), pool_grad = find(g, "max_pool2d_grad");
    const ir::TensorId block_out = out(g, pool_first ? "relu" : "max_pool2d"), dw = out(g, "conv2d_grad_weight");
    const ir::TensorId db = g.op(g.consumers(out(g, "max_pool2d_grad")).back()).outputs[0];
    const ir::TensorId dy = g.op(pool_grad).inputs[1];
    size_t made = 0;
    const ir::Graph r = fused(g, &made);
    EXPECT_EQ(made, 1u);
    EXPECT_EQ(r.num_ops(), g.num_ops() - 4) << "relu and pool, the weight and bias gradients removed";
    const ir::Op& forward = r.op(conv);
    EXPECT_EQ(forward.schema->name, "conv2d_relu_max_pool2d") << "at the conv's place";
    EXPECT_EQ(forward.inputs, g.op(conv).inputs) << "x, w, b";
    EXPECT_EQ(forward.outputs, std::vector<ir::TensorId>{block_out});
    EXPECT_EQ(forward.attrs.get_int("relu_first"), pool_first ? 0 : 1);
    EXPECT_EQ(forward.attrs.get_ints("pool_kernel"), std::vector<int64_t>{2});
    EXPECT_EQ(r.tensor(block_out).producer, conv);
    const ir::OpId grad = find(r, "conv2d_relu_max_pool2d_grad_weight");
    ASSERT_EQ(grad, pool_grad - 2) << "at the pool gradient's place, after the 2 forward ops removed";
    std::vector<ir::TensorId> inputs = g.op(conv).inputs;
    inputs.push_back(dy);
    EXPECT_EQ(r.op(grad).inputs, inputs) << "x, w, b, and the pool output's gradient";
    EXPECT_EQ(r.op(grad).outputs, (std::vector<ir::TensorId>{dw, db}));
    EXPECT_EQ(r.op(grad).attrs.get_int("relu_folded"), g.op(pool_grad).attrs.get_int("relu_folded"));
    EXPECT_GT(ops::scratch_bytes(r, r.op(grad)), ops::scratch_bytes(r, forward)) << "the weight gradient's sums too";
    for (const char* type : {"conv2d", "relu", "max_pool2d", "max_pool2d_grad", "conv2d_grad_weight"}) {
      const ir::TensorId t = out(g, type);
      if (t == block_out || t == dw) continue;
      EXPECT_EQ(r.tensor(t).producer, -1) << type << "'s output: made by nothing";
      EXPECT_TRUE(r.consumers(t).empty()) << type << "'s output: read by nothing";
    }
    for (size_t o = 0; o < r.num_ops(); ++o) {
      for (ir::TensorId t : r.op(static_cast<ir::OpId>(o)).outputs) EXPECT_EQ(r.tensor(t).producer, static_cast<ir::OpId>(o));
    }
    size_t again = 1;
    fused(r, &again);
    EXPECT_EQ(again, 0u) << "idempotent";
  }
}

TEST(ConvPoolFusion, AConvWithoutBiasFusesWithoutABiasGradient) {
  const testing::Cnn m = testing::build_cnn({.bias = false});
  const ir::Graph r = fused(m.g);
  const ir::Op& forward = r.op(find(r, "conv2d_relu_max_pool2d"));
  EXPECT_EQ(forward.inputs.size(), 2u);
  const ir::Op& grad = r.op(find(r, "conv2d_relu_max_pool2d_grad_weight"));
  EXPECT_EQ(grad.inputs.size(), 3u);
  EXPECT_EQ(grad.outputs, std::vector<ir::TensorId>{out(m.g, "conv2d_grad_weight")});
}

TEST(ConvPoolFusion, NoFusionWhereAnIntermediateIsReadElsewhereOrWindowsOverlapOrStagesDiffer) {
  for (const bool pool_first : {false, true}) {
    SCOPED_TRACE(pool_first ? "pool first" : "relu first");
    size_t made = 1;
    const ir::Graph streamed = fused(testing::build_cnn({.pool_first = pool_first, .block = true}).g, &made);
    EXPECT_EQ(made, 0u) << "the relu's input streamed to the host";
    const testing::Cnn overlapping = testing::build_cnn({.pool_first = pool_first, .pool = 3, .pool_stride = 2});
    const ir::Graph unchanged = fused(overlapping.g, &made);
    EXPECT_EQ(made, 0u) << "overlapping windows: the pool gradient cannot run in place";
    EXPECT_EQ(unchanged.num_ops(), overlapping.g.num_ops()) << "a refused rewrite changes nothing";
    testing::Cnn m = testing::build_cnn({.pool_first = pool_first});
    testing::add(m.g, "neg", {out(m.g, "conv2d")});
    fused(m.g, &made);
    EXPECT_EQ(made, 0u) << "a second reader of the conv output";
    testing::Cnn staged = testing::build_cnn({.pool_first = pool_first});
    std::vector<int32_t> stage(staged.g.num_ops(), 0);
    stage[static_cast<size_t>(find(staged.g, "max_pool2d_grad"))] = 1;
    EXPECT_EQ(fuse_conv_pool_groups(staged.g, stage), 0u) << "the pool gradient on another stage";
  }
}

TEST(ConvPoolFusion, AConvWhoseInputNeedsAGradientDoesNotGroup) {
  // The second conv of a network (seed 003's) reads the conv output's gradient for its
  // input's; the group makes that gradient one image at a time and keeps none of it.
  ir::Graph g;
  const ir::TensorId x = g.stream(g.add_h2d_stream("x", ir::DType::Float32, {2, 1, 6, 6})).tensor;
  const ir::TensorId w = g.add_variable("w", ir::DType::Float32, {2, 1, 3, 3}, testing::f32(std::vector<float>(18, 0.1f)));
  const ir::TensorId v = g.add_variable("v", ir::DType::Float32, {2, 1, 6, 6}, testing::f32(std::vector<float>(72, 0.5f)));
  const ir::TensorId h = testing::add(g, "mul", {x, v});  // the conv's input depends on a weight
  ir::Attributes pool;
  pool.set("kernel", std::vector<int64_t>{2});
  const ir::TensorId y = testing::add(g, "max_pool2d", {testing::add(g, "relu", {testing::add(g, "conv2d", {h, w})})}, pool);
  const ir::TensorId loss = testing::add(g, "reduce_sum", {y});
  const std::vector<ir::TensorId> wrt{w, v};
  ir::autodiff(g, loss, wrt);
  EXPECT_NE(find(g, "conv2d_grad_input"), -1);
  size_t made = 1;
  fused(g, &made);
  EXPECT_EQ(made, 0u);
}

TEST(ConvPoolFusion, AReluReadingTheFusedOpsOutputRunsAsAnOpOfItsOwn) {
  // conv -> relu -> max_pool2d -> relu: the second relu would fuse into the pool, which
  // the fused op runs; there is no conv2d_relu_max_pool2d_relu, so it stays a relu.
  testing::Cnn m = testing::build_cnn({.relu_after = true});
  ir::Graph& g = m.g;
  const ir::TensorId pooled = out(g, "max_pool2d");
  const Program p = compile(g, place(g, {}), {});
  EXPECT_EQ(relu_fused_ops(g), 0u);
  const ir::OpId second_relu = g.consumers(pooled).front();
  ASSERT_EQ(g.op(second_relu).schema->name, "relu");
  EXPECT_EQ(g.op(g.tensor(pooled).producer).schema->name, "conv2d_relu_max_pool2d");
  const std::vector<Action>& forward = p.stages[0].actions[0];
  EXPECT_EQ(std::count_if(forward.begin(), forward.end(),
                          [&](const Action& a) { return a.kind == ActionKind::RunOp && a.index == second_relu; }),
            1);
}

TEST(ConvPoolFusion, TheProgramRunsEachFusedOpAsOneActionAndStoresNoIntermediate) {
  for (const bool pool_first : {false, true}) {
    SCOPED_TRACE(pool_first ? "pool first" : "relu first");
    testing::Cnn m = testing::build_cnn({.pool_first = pool_first});
    ir::Graph& g = m.g;
    std::vector<ir::TensorId> between;
    for (const char* type : {"conv2d", "relu", "max_pool2d", "max_pool2d_grad"}) between.push_back(out(g, type));
    const ir::TensorId block_out = out(g, pool_first ? "relu" : "max_pool2d"), dw = out(g, "conv2d_grad_weight");
    const Program p = compile(g, place(g, {}), {});
    EXPECT_EQ(relu_fused_ops(g), 0u) << "the fused op runs the relu";
    const char* fused_ops[] = {"conv2d_relu_max_pool2d", "conv2d_relu_max_pool2d_grad_weight"};
    for (int phase : {0, 1}) {
      const std::vector<Action>& actions = p.stages[0].actions[phase];
      const ir::OpId op = find(g, fused_ops[phase]);
      EXPECT_EQ(std::count_if(actions.begin(), actions.end(),
                              [&](const Action& a) { return a.kind == ActionKind::RunOp && a.index == op; }),
                1);
    }
    const std::map<ir::TensorId, size_t>& stored = p.stages[0].slot_offset;
    for (const ir::TensorId t : between) EXPECT_EQ(stored.count(t), t == block_out ? 1u : 0u) << g.tensor(t).name;
    EXPECT_EQ(stored.count(dw), 1u);
  }
}

}  // namespace
}  // namespace plexus::compile
