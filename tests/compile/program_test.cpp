#include "core/compile/passes.h"
#include "core/compile/program.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "core/ir/autodiff.h"
#include "core/ir/error.h"
#include "tests/runtime/compiled_graph.h"
#include "tests/runtime/test_graphs.h"

namespace plexus::compile {
namespace {

namespace testing = runtime::testing;

using testing::f32;

using testing::compile_one_stage;

std::vector<ActionKind> kinds(const std::vector<Action>& actions) {
  std::vector<ActionKind> out;
  for (const Action& a : actions) out.push_back(a.kind);
  return out;
}

TEST(Program, DeviceToHostStreamsAreCopiedWhereTheyWereAdded) {
  ir::Graph g;
  const ir::StreamId s = g.add_h2d_stream("x", ir::DType::Float32, {256});
  const ir::TensorId a = g.add_op("neg", {g.stream(s).tensor}, {}).front();
  const ir::TensorId b = g.add_op("neg", {a}, {}).front();
  const ir::TensorId c = g.add_op("neg", {b}, {}).front();
  g.add_op("neg", {c}, {});
  g.add_d2h_stream("a", a);  // added after op 3: copied after it, so `a` lives until then
  const Program p = compile_one_stage(g);
  EXPECT_EQ(kinds(p.stages[0].actions[0]),
            (std::vector<ActionKind>{ActionKind::LoadStream, ActionKind::RunOp, ActionKind::RunOp, ActionKind::RunOp,
                                     ActionKind::RunOp, ActionKind::StoreStream}));
  for (size_t position = 1; position <= 5; ++position) EXPECT_GE(p.stages[0].slot_plan.live_bytes[position], 1024u);
}

// Two blocks: x -> [B1: h = relu(x w1)] -> [B2: y = h w2, loss] with autodiff and SGD.
struct TwoStages {
  ir::Graph g;
  ir::TensorId w1, w2, loss;
  TwoStages() {
    const ir::TensorId x = g.stream(g.add_h2d_stream("x", ir::DType::Float32, {4, 3})).tensor;
    w1 = g.add_variable("w1", ir::DType::Float32, {3, 5}, std::vector<std::byte>(60));
    w2 = g.add_variable("w2", ir::DType::Float32, {5, 2}, std::vector<std::byte>(40));
    g.begin_block("B1", -1);
    const ir::TensorId h = g.add_op("relu", {g.add_op("matmul", {x, w1}, {}).front()}, {}).front();
    g.end_block();
    g.begin_block("B2", -1);
    const ir::TensorId y = g.add_op("matmul", {h, w2}, {}).front();
    loss = g.add_op("reduce_mean", {g.add_op("mul", {y, y}, {}).front()}, {}).front();
    g.end_block();
    const std::vector<ir::TensorId> wrt{w1, w2};
    const std::vector<ir::TensorId> grads = ir::autodiff(g, loss, wrt);
    ir::Attributes a;
    a.set("a", 1.0);
    a.set("b", -0.1);
    g.add_op("scaled_add_", {w1, grads[0]}, a);
    g.add_op("scaled_add_", {w2, grads[1]}, a);
    g.add_d2h_stream("loss", loss);
  }
};

TEST(Program, StagesExchangeActivationsForwardAndGradientsBackward) {
  TwoStages m;
  const Placement pl = place(m.g, {{{"B1"}, 0}, {{"B2"}, 1}});
  const Program p = compile(m.g, pl, {.micro_batches = 1, .slots = {2, 1}, .offload_optimizer_state = false, .in_place = {}});
  ASSERT_EQ(p.stages.size(), 2u);
  EXPECT_TRUE(p.training);
  ASSERT_EQ(p.channels.size(), 2u);
  const bool forward_first = p.channels[0].to_phase == ir::Phase::Forward;
  const ChannelPlan& activation = p.channels[forward_first ? 0 : 1];
  const ChannelPlan& gradient = p.channels[forward_first ? 1 : 0];
  EXPECT_EQ(activation.from_stage, 0);  // h: stage 0 forward -> stage 1 forward
  EXPECT_EQ(activation.to_stage, 1);
  EXPECT_EQ(activation.from_phase, ir::Phase::Forward);
  EXPECT_EQ(activation.bytes, 4u * 5u * 4u);
  EXPECT_EQ(gradient.from_stage, 1);  // dL/dh: stage 1 backward -> stage 0 backward
  EXPECT_EQ(gradient.to_stage, 0);
  EXPECT_EQ(gradient.from_phase, ir::Phase::Backward);
  EXPECT_EQ(gradient.to_phase, ir::Phase::Backward);
  EXPECT_EQ(p.home_stage.at(m.w1), 0);
  EXPECT_EQ(p.home_stage.at(m.w2), 1);
  EXPECT_EQ(p.devices[0].persistent_offset.count(m.w2), 0u);
  EXPECT_EQ(p.devices[1].persistent_offset.count(m.w2), 1u);
  // Stage 0 keeps two micro-batch slots: its arena holds two slot regions.
  EXPECT_GE(p.devices[0].arena_bytes, p.devices[0].persistent_size + 2 * p.stages[0].slot_plan.arena_bytes);
}

TEST(Program, GradientAccumulationSumsWhatTheUpdateReads) {
  TwoStages m;
  const Program p = compile(m.g, place(m.g, {{{"B1"}, 0}, {{"B2"}, 1}}), {.micro_batches = 4, .slots = {2, 1}, .offload_optimizer_state = false, .in_place = {}});
  EXPECT_EQ(p.stages[0].accumulator.size(), 1u);  // dL/dw1
  EXPECT_EQ(p.stages[1].accumulator.size(), 1u);  // dL/dw2
  const auto& backward = p.stages[1].actions[static_cast<size_t>(ir::Phase::Backward)];
  EXPECT_EQ(backward.back().kind, ActionKind::Accumulate);
}

TEST(Program, OffloadedOptimizerStateLeavesTheDevice) {
  ir::Graph g;
  const ir::TensorId x = g.stream(g.add_h2d_stream("x", ir::DType::Float32, {4})).tensor;
  const ir::TensorId w = g.add_variable("w", ir::DType::Float32, {4}, std::vector<std::byte>(16));
  const ir::TensorId loss = g.add_op("reduce_sum", {g.add_op("mul", {x, w}, {}).front()}, {}).front();
  const std::vector<ir::TensorId> wrt{w};
  const ir::TensorId grad = ir::autodiff(g, loss, wrt).front();
  const ir::TensorId mom = g.add_variable("m", ir::DType::Float32, {4}, std::vector<std::byte>(16));
  const ir::TensorId var = g.add_variable("v", ir::DType::Float32, {4}, std::vector<std::byte>(16));
  const ir::TensorId step = g.add_variable("step", ir::DType::Float32, {}, std::vector<std::byte>(4));
  g.add_op("adamw_", {w, grad, mom, var, step}, {});
  const Program on_device = compile_one_stage(g);
  const Program offloaded = compile_one_stage(g, {.micro_batches = 1, .slots = {}, .offload_optimizer_state = true, .in_place = {}});
  EXPECT_EQ(offloaded.offloaded.size(), 3u);
  EXPECT_EQ(offloaded.offloaded_bytes, 3u * 64u);  // aligned
  EXPECT_EQ(on_device.devices[0].persistent_bytes - offloaded.devices[0].persistent_bytes, 16u + 16u + 4u);
  EXPECT_EQ(kinds(offloaded.stages[0].actions[static_cast<size_t>(ir::Phase::Update)]),
            (std::vector<ActionKind>{ActionKind::LoadOffloaded, ActionKind::LoadOffloaded, ActionKind::LoadOffloaded,
                                     ActionKind::RunOp, ActionKind::StoreOffloaded, ActionKind::StoreOffloaded,
                                     ActionKind::StoreOffloaded}));
}

// Found by samples/char_gpt --offload-optimiser: an op other than the optimizer reading its
// offloaded state (lr_schedule of the step count) read the slot before anything was
// loaded into it ("step is -0.0017"). Every op reading an offloaded tensor loads it first;
// only the optimizer, which updates it, stores it back.
TEST(Program, AnyOpReadingOffloadedStateLoadsItFirst) {
  ir::Graph g;
  const ir::TensorId x = g.stream(g.add_h2d_stream("x", ir::DType::Float32, {4})).tensor;
  const ir::TensorId w = g.add_variable("w", ir::DType::Float32, {4}, std::vector<std::byte>(16));
  const ir::TensorId loss = g.add_op("reduce_sum", {g.add_op("mul", {x, w}, {}).front()}, {}).front();
  const std::vector<ir::TensorId> wrt{w};
  const ir::TensorId grad = ir::autodiff(g, loss, wrt).front();
  const ir::TensorId mom = g.add_variable("m", ir::DType::Float32, {4}, std::vector<std::byte>(16));
  const ir::TensorId var = g.add_variable("v", ir::DType::Float32, {4}, std::vector<std::byte>(16));
  const ir::TensorId step = g.add_variable("step", ir::DType::Float32, {}, std::vector<std::byte>(4));
  ir::Attributes schedule;
  schedule.set("warmup_steps", int64_t{1});
  schedule.set("total_steps", int64_t{10});
  const ir::TensorId lr = g.add_op("lr_schedule", {step}, schedule).front();
  g.add_op("adamw_", {w, grad, mom, var, step, lr}, {});
  const Program offloaded = compile_one_stage(g, {.micro_batches = 1, .slots = {}, .offload_optimizer_state = true, .in_place = {}});
  using enum ActionKind;
  EXPECT_EQ(kinds(offloaded.stages[0].actions[static_cast<size_t>(ir::Phase::Update)]),
            (std::vector<ActionKind>{LoadOffloaded, RunOp, LoadOffloaded, LoadOffloaded, LoadOffloaded, RunOp,
                                     StoreOffloaded, StoreOffloaded, StoreOffloaded}));
}

// TwoStages' gradients clipped to their global norm across the stages: each stage's update
// sums its squares, stage 0 adds stage 1's sum to its own and sends the total back.
struct ClippedAcrossStages {
  ir::Graph g;
  ir::TensorId n2, total;
  ir::OpId add_op, clip_op2;
  explicit ClippedAcrossStages(int64_t device_of_b2) : device_of_b2_(device_of_b2) {
    const ir::TensorId x = g.stream(g.add_h2d_stream("x", ir::DType::Float32, {4, 3})).tensor;
    const ir::TensorId w1 = g.add_variable("w1", ir::DType::Float32, {3, 5}, std::vector<std::byte>(60));
    const ir::TensorId w2 = g.add_variable("w2", ir::DType::Float32, {5, 2}, std::vector<std::byte>(40));
    const ir::TensorId h = in_block("B1", [&] { return g.add_op("matmul", {x, w1}, {}).front(); });
    const ir::TensorId loss = in_block("B2", [&] { return g.add_op("reduce_mean", {g.add_op("matmul", {h, w2}, {}).front()}, {}).front(); });
    const std::vector<ir::TensorId> grads = ir::autodiff(g, loss, std::vector<ir::TensorId>{w1, w2});
    n2 = in_block("B2", [&] { return g.add_op("global_sq_norm", {grads[1]}, {}).front(); });
    total = in_block("B1", [&] { return g.add_op("add", {g.add_op("global_sq_norm", {grads[0]}, {}).front(), n2}, {}).front(); });
    add_op = g.tensor(total).producer;
    in_block("B2", [&] { return g.add_op("clip_scale_", {grads[1], total}, {}).front(); });
    clip_op2 = static_cast<ir::OpId>(g.num_ops() - 1);
    in_block("B1", [&] { return g.add_op("clip_scale_", {grads[0], total}, {}).front(); });
  }
  Program compile_it() { return compile(g, place(g, {{{"B1"}, 0}, {{"B2"}, device_of_b2_}}), {}); }

 private:
  template <class F>
  ir::TensorId in_block(const std::string& name, F f) {
    g.begin_block(name, -1);
    const ir::TensorId t = f();
    g.end_block();
    return t;
  }
  int64_t device_of_b2_;
};

// The position of `a` in `actions` (actions.size() when absent).
size_t position_of(const std::vector<Action>& actions, ActionKind kind, int32_t index) {
  for (size_t i = 0; i < actions.size(); ++i) {
    if (actions[i].kind == kind && actions[i].index == index) return i;
  }
  return actions.size();
}

TEST(Program, UpdateStepsOfTwoStagesExchangeTensorsBothWays) {
  ClippedAcrossStages m(1);
  const Program p = m.compile_it();
  std::vector<int32_t> update_channels;
  for (size_t c = 0; c < p.channels.size(); ++c) {
    if (p.channels[c].from_phase == ir::Phase::Update) update_channels.push_back(static_cast<int32_t>(c));
  }
  ASSERT_EQ(update_channels.size(), 2u);
  const ChannelPlan& partial = p.channels[static_cast<size_t>(update_channels[0])];  // n2: stage 1 -> stage 0
  const ChannelPlan& sum = p.channels[static_cast<size_t>(update_channels[1])];      // total: stage 0 -> stage 1
  EXPECT_EQ(partial.root, m.n2);
  EXPECT_EQ(std::tie(partial.from_stage, partial.to_stage, partial.to_phase), std::tuple(1, 0, ir::Phase::Update));
  EXPECT_EQ(partial.bytes, 4u);
  EXPECT_EQ(sum.root, m.total);
  EXPECT_EQ(std::tie(sum.from_stage, sum.to_stage, sum.to_phase), std::tuple(0, 1, ir::Phase::Update));
  // Stage 0: receive n2 right before the add, send the total right after it; stage 1:
  // send n2 right after computing it, receive the total right before clipping. Within one
  // update step, so neither stage waits for the other's whole step.
  const auto& update0 = p.stages[0].actions[static_cast<size_t>(ir::Phase::Update)];
  const auto& update1 = p.stages[1].actions[static_cast<size_t>(ir::Phase::Update)];
  const size_t add = position_of(update0, ActionKind::RunOp, static_cast<int32_t>(m.add_op));
  ASSERT_LT(add, update0.size());
  EXPECT_EQ(position_of(update0, ActionKind::Receive, update_channels[0]), add - 1);
  EXPECT_EQ(position_of(update0, ActionKind::Send, update_channels[1]), add + 1);
  const size_t n2 = position_of(update1, ActionKind::RunOp, static_cast<int32_t>(m.g.tensor(m.n2).producer));
  const size_t clip = position_of(update1, ActionKind::RunOp, static_cast<int32_t>(m.clip_op2));
  ASSERT_LT(clip, update1.size());
  EXPECT_EQ(position_of(update1, ActionKind::Send, update_channels[0]), n2 + 1);
  EXPECT_EQ(position_of(update1, ActionKind::Receive, update_channels[1]), clip - 1);
  EXPECT_GT(p.stages[1].slot_offset.count(m.total), 0u);  // the received total has a place in stage 1
}

TEST(Program, UpdateStepsExchangingTensorsOnOneDeviceAreRefused) {
  ClippedAcrossStages m(0);
  try {
    m.compile_it();
    FAIL() << "expected an error";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("from the update of stage 1, which runs on the same device"), std::string::npos)
        << e.what();
  }
}

TEST(Program, AVariableUsedByTwoStagesIsAnErrorNamingIt) {
  ir::Graph g;
  const ir::TensorId x = g.stream(g.add_h2d_stream("x", ir::DType::Float32, {2})).tensor;
  const ir::TensorId w = g.add_variable("shared_w", ir::DType::Float32, {2}, std::vector<std::byte>(8));
  g.begin_block("B1", -1);
  const ir::TensorId h = g.add_op("mul", {x, w}, {}).front();
  g.end_block();
  g.begin_block("B2", -1);
  g.add_op("mul", {h, w}, {});
  g.end_block();
  try {
    compile(g, place(g, {{{"B1"}, 0}, {{"B2"}, 1}}), {});
    FAIL() << "expected an error";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("shared_w"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("a variable lives on one stage"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace plexus::compile
