// Conv -> relu -> max-pool groups (core/compile/conv_pool_fusion.h): which convs group, the
// groups' members, inputs and outputs, and the program's one RunGroup action per group,
// whose intermediates get no buffer.
#include "core/compile/conv_pool_fusion.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/compile/passes.h"
#include "core/compile/program.h"
#include "tests/runtime/small_cnn.h"

namespace plexus::runtime {
namespace {

using testing::CnnRecipe;

std::vector<OpGroup> groups_of(const ir::Graph& g) { return plan_conv_pool_groups(g, place(g, {}).op_stage); }

/// The op of `type` in g (the first one).
ir::OpId find(const ir::Graph& g, const char* type) {
  for (size_t o = 0; o < g.num_ops(); ++o) {
    if (g.op(static_cast<ir::OpId>(o)).def->name == type) return static_cast<ir::OpId>(o);
  }
  return -1;
}

ir::TensorId out(const ir::Graph& g, const char* type) { return g.op(find(g, type)).outputs[0]; }

/// The `<op>_relu` ops of g (the relu-epilogue rewrite's, relu_fusion.h).
size_t relu_fused_ops(const ir::Graph& g) {
  return static_cast<size_t>(
      std::count_if(g.ops().begin(), g.ops().end(), [](const ir::Op& op) { return op.def->name.ends_with("_relu"); }));
}

TEST(ConvPoolFusion, BothSeedOrdersGroupTheirForwardAndGradientOps) {
  for (const bool pool_first : {false, true}) {
    SCOPED_TRACE(pool_first ? "conv -> pool -> relu (seed 003)" : "conv -> relu -> pool (seed 002)");
    const testing::Cnn m = testing::build_cnn({.pool_first = pool_first});
    const ir::Graph& g = m.g;
    const std::vector<OpGroup> groups = groups_of(g);
    ASSERT_EQ(groups.size(), 2u);
    const ir::OpId conv = find(g, "conv2d"), relu = find(g, "relu"), pool = find(g, "max_pool2d");
    EXPECT_EQ(groups[0].ops, (std::vector<ir::OpId>{conv, pool_first ? pool : relu, pool_first ? relu : pool}));
    EXPECT_EQ(groups[0].inputs, g.op(conv).inputs) << "x, w, b";
    EXPECT_EQ(groups[0].outputs, std::vector<ir::TensorId>{out(g, pool_first ? "relu" : "max_pool2d")});
    const ir::OpId pool_grad = find(g, "max_pool2d_grad"), weight = find(g, "conv2d_grad_weight");
    const ir::OpId bias = g.consumers(out(g, "max_pool2d_grad")).back();
    EXPECT_EQ(groups[1].ops, (std::vector<ir::OpId>{pool_grad, weight, bias}));
    std::vector<ir::TensorId> inputs = g.op(conv).inputs;
    inputs.push_back(g.op(pool_grad).inputs[1]);
    EXPECT_EQ(groups[1].inputs, inputs) << "x, w, b, and the pool output's gradient";
    EXPECT_EQ(groups[1].outputs, (std::vector<ir::TensorId>{out(g, "conv2d_grad_weight"), g.op(bias).outputs[0]}));
    EXPECT_GT(groups[1].scratch_bytes, groups[0].scratch_bytes) << "the weight gradient's sums too";
  }
}

TEST(ConvPoolFusion, AConvWithoutBiasGroupsWithoutABiasGradient) {
  const testing::Cnn m = testing::build_cnn({.bias = false});
  const std::vector<OpGroup> groups = groups_of(m.g);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].inputs.size(), 2u);
  EXPECT_EQ(groups[1].ops.size(), 2u);
  EXPECT_EQ(groups[1].outputs, std::vector<ir::TensorId>{out(m.g, "conv2d_grad_weight")});
}

TEST(ConvPoolFusion, NoGroupWhereAnIntermediateIsReadElsewhereOrWindowsOverlapOrStagesDiffer) {
  for (const bool pool_first : {false, true}) {
    SCOPED_TRACE(pool_first ? "pool first" : "relu first");
    EXPECT_TRUE(groups_of(testing::build_cnn({.pool_first = pool_first, .block = true}).g).empty())
        << "the relu's input streamed to the host";
    EXPECT_TRUE(groups_of(testing::build_cnn({.pool_first = pool_first, .pool = 3, .pool_stride = 2}).g).empty())
        << "overlapping windows: the pool gradient cannot run in place";
    testing::Cnn m = testing::build_cnn({.pool_first = pool_first});
    testing::add(m.g, "neg", {out(m.g, "conv2d")});
    EXPECT_TRUE(groups_of(m.g).empty()) << "a second reader of the conv output";
    testing::Cnn staged = testing::build_cnn({.pool_first = pool_first});
    std::vector<int32_t> stage(staged.g.num_ops(), 0);
    stage[static_cast<size_t>(find(staged.g, "max_pool2d_grad"))] = 1;
    EXPECT_TRUE(plan_conv_pool_groups(staged.g, stage).empty()) << "the pool gradient on another stage";
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
  EXPECT_TRUE(groups_of(g).empty());
}

TEST(ConvPoolFusion, AReluReadingAGroupsOutputRunsAsAnOpOfItsOwn) {
  // conv -> relu -> max_pool2d -> relu: the second relu would fuse into the pool, which
  // runs inside the group; it must keep an action of its own.
  testing::Cnn m = testing::build_cnn({.relu_after = true});
  ir::Graph& g = m.g;
  const Program p = compile(g, place(g, {}), {});
  ASSERT_EQ(p.op_groups.size(), 2u);
  EXPECT_EQ(relu_fused_ops(g), 0u);
  const ir::OpId second_relu = g.consumers(out(g, "max_pool2d")).front();
  ASSERT_EQ(g.op(second_relu).def->name, "relu");
  const std::vector<Action>& forward = p.stages[0].actions[0];
  EXPECT_EQ(std::count_if(forward.begin(), forward.end(),
                          [&](const Action& a) { return a.kind == ActionKind::RunOp && a.index == second_relu; }),
            1);
}

TEST(ConvPoolFusion, TheProgramRunsEachGroupAsOneActionAndStoresNoIntermediate) {
  for (const bool pool_first : {false, true}) {
    SCOPED_TRACE(pool_first ? "pool first" : "relu first");
    testing::Cnn m = testing::build_cnn({.pool_first = pool_first});
    ir::Graph& g = m.g;
    const Program p = compile(g, place(g, {}), {});
    ASSERT_EQ(p.op_groups.size(), 2u);
    EXPECT_EQ(relu_fused_ops(g), 0u) << "the group runs the relu";
    for (int phase : {0, 1}) {
      const std::vector<Action>& actions = p.stages[0].actions[phase];
      EXPECT_EQ(std::count_if(actions.begin(), actions.end(), [&](const Action& a) {
                  return a.kind == ActionKind::RunGroup && a.index == phase;
                }),
                1);
      for (const Action& a : actions) {
        if (a.kind != ActionKind::RunOp) continue;
        for (const OpGroup& group : p.op_groups) {
          EXPECT_EQ(std::count(group.ops.begin(), group.ops.end(), a.index), 0) << "a member with an action of its own";
        }
      }
    }
    const std::map<ir::TensorId, size_t>& stored = p.stages[0].slot_offset;
    for (const char* type : {"conv2d", "relu", "max_pool2d", "max_pool2d_grad"}) {
      const bool group_output = std::string(type) == (pool_first ? "relu" : "max_pool2d");
      EXPECT_EQ(stored.count(out(g, type)), group_output ? 1u : 0u) << type << "'s output";
    }
    EXPECT_EQ(stored.count(out(g, "conv2d_grad_weight")), 1u);
  }
}

}  // namespace
}  // namespace plexus::runtime
