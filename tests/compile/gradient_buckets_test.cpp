// Gradient buckets (core/compile/gradient_buckets.h): which all-reduces a bucket takes, in
// what order, where the cap closes it, and the program's one action per bucket.
#include "core/compile/gradient_buckets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "core/compile/passes.h"
#include "core/compile/program.h"
#include "core/ir/autodiff.h"
#include "tests/runtime/data_parallel_mlp.h"
#include "tests/runtime/test_graphs.h"

namespace plexus::runtime {
namespace {

using testing::build_mlp;
using testing::f32;

// The MLP of tests/runtime/data_parallel_mlp.h at R=2: w0 [12,5] (240 bytes), b0 [5] (20),
// w1 [5,3] (60), b1 [3] (12), each gradient mean-reduced by a replicated_all_reduce.
constexpr size_t kW0 = 240, kB0 = 20, kW1 = 60, kB1 = 12;

// The all-reduce of each parameter's gradient, in parameter order.
std::vector<ir::OpId> all_reduces(const ir::Graph& g) {
  std::vector<ir::OpId> out;
  for (size_t o = 0; o < g.num_ops(); ++o) {
    if (g.op(static_cast<ir::OpId>(o)).def->name == "replicated_all_reduce") out.push_back(static_cast<ir::OpId>(o));
  }
  return out;
}

std::vector<GradientBucket> buckets_of(const ir::Graph& g, size_t cap) {
  return plan_gradient_buckets(g, place(g, {}).op_stage, cap);
}

TEST(GradientBuckets, OneBucketTakesEveryGradientInTheOrderTheBackwardPassComputesThem) {
  const testing::Mlp m = build_mlp(2, 4);
  const std::vector<ir::OpId> ar = all_reduces(m.graph);  // w0, b0, w1, b1
  ASSERT_EQ(ar.size(), 4u);
  const std::vector<GradientBucket> b = buckets_of(m.graph, size_t{25} << 20);
  ASSERT_EQ(b.size(), 1u);
  // The backward pass reaches the last layer first: b1 and w1, then b0 and w0.
  const std::vector<ir::OpId>& expected = b[0].ops;
  EXPECT_EQ(std::set<ir::OpId>(expected.begin(), expected.end()), std::set<ir::OpId>(ar.begin(), ar.end()));
  const auto pos = [&](ir::OpId op) { return std::find(expected.begin(), expected.end(), op) - expected.begin(); };
  EXPECT_LT(pos(ar[2]), pos(ar[0]));  // w1 before w0
  EXPECT_LT(pos(ar[3]), pos(ar[1]));  // b1 before b0
  EXPECT_EQ(b[0].bytes, kW0 + kB0 + kW1 + kB1);
}

TEST(GradientBuckets, TheCapClosesABucketOnceReachedAndZeroMeansNone) {
  const testing::Mlp m = build_mlp(2, 4);
  EXPECT_TRUE(buckets_of(m.graph, 0).empty());
  // A cap of 72 bytes: b1 + w1 (72) close the first bucket; then b0 + w0 (260).
  const std::vector<GradientBucket> b = buckets_of(m.graph, kB1 + kW1);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].bytes, kB1 + kW1);
  EXPECT_EQ(b[1].bytes, kB0 + kW0);
  // A cap every gradient reaches alone: buckets of one member are left out.
  EXPECT_TRUE(buckets_of(m.graph, 1).empty());
}

TEST(GradientBuckets, OneReplicaHasNoGradientAllReduces) {
  EXPECT_TRUE(buckets_of(build_mlp(1, 8).graph, size_t{25} << 20).empty());
}

// A tiny model of two variables after autodiff: the graph and the two gradients.
struct TwoGradients {
  ir::Graph g;
  std::vector<ir::TensorId> grads;
};

TwoGradients two_gradient_model() {
  TwoGradients m;
  m.g.set_replication_factor(2);
  const ir::TensorId vars[2] = {m.g.add_variable("a", ir::DType::Float32, {2}, f32({1, 2})),
                                m.g.add_variable("b", ir::DType::Float32, {2}, f32({3, 4}))};
  const ir::TensorId loss = m.g.add_op("reduce_sum", {m.g.add_op("mul", {vars[0], vars[1]}, {}).front()}, {}).front();
  m.grads = ir::autodiff(m.g, loss, vars);
  return m;
}

ir::Attributes reduction(const std::string& op) {
  ir::Attributes a;
  a.set("op", op);
  return a;
}

// Both gradients all-reduced in place, with `first` and `second` as the reductions.
ir::Graph two_gradients(const std::string& first, const std::string& second) {
  TwoGradients m = two_gradient_model();
  m.g.add_op("replicated_all_reduce_", {m.grads[0]}, reduction(first));
  m.g.add_op("replicated_all_reduce_", {m.grads[1]}, reduction(second));
  return std::move(m.g);
}

TEST(GradientBuckets, MembersShareTheReduction) {
  EXPECT_EQ(buckets_of(two_gradients("mean", "mean"), 1024).size(), 1u);
  EXPECT_TRUE(buckets_of(two_gradients("mean", "sum"), 1024).empty());
}

TEST(GradientBuckets, AnAllReduceOfWhatTheUpdateComputesIsNoMember) {
  ir::Graph g = two_gradients("sum", "sum");
  // A third all-reduce, of a tensor the update step computes (like a gradient norm) from
  // variable a (the graph's first tensor): not a gradient.
  const ir::TensorId sq = g.add_op("reduce_sum", {ir::TensorId{0}}, {}).front();
  g.add_op("replicated_all_reduce_", {sq}, reduction("sum"));
  const std::vector<GradientBucket> b = buckets_of(g, 1024);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].ops.size(), 2u);
}

TEST(GradientBuckets, AGradientReadByAnUpdateOpBeforeItsAllReduceStaysAlone) {
  TwoGradients m = two_gradient_model();
  m.g.add_op("replicated_all_reduce_", {m.grads[0]}, reduction("sum"));
  m.g.add_op("neg", {m.grads[1]}, {});  // reads b's gradient first: an earlier all-reduce would change what it reads
  m.g.add_op("replicated_all_reduce_", {m.grads[1]}, reduction("sum"));
  EXPECT_TRUE(buckets_of(m.g, 1024).empty());
}

TEST(GradientBuckets, TheProgramRunsABucketAsOneActionOnItsMembersLaidOutAsOneSpan) {
  testing::Mlp m = build_mlp(2, 4);
  CompileOptions o;
  o.gradient_bucket_bytes = size_t{25} << 20;
  const Program p = compile(m.graph, place(m.graph, {}), o);
  ASSERT_EQ(p.buckets.size(), 1u);
  const std::vector<Action>& update = p.stages[0].actions[static_cast<int>(ir::Phase::Update)];
  const auto count = [&](ActionKind k) {
    return std::count_if(update.begin(), update.end(), [&](const Action& a) { return a.kind == k; });
  };
  EXPECT_EQ(count(ActionKind::AllReduceBucket), 1);
  EXPECT_EQ(count(ActionKind::RunOp), 4);  // the four SGD updates; no all-reduce of its own
  EXPECT_EQ(update.front().kind, ActionKind::AllReduceBucket);  // before the first update reads a result
  // gradient_as_bucket_view: inputs one after the other at aligned offsets, outputs too,
  // and no scratch to pack them into.
  EXPECT_TRUE(p.buckets[0].view);
  for (const bool inputs : {true, false}) {
    const ir::Op& first = m.graph.op(p.buckets[0].ops.front());
    const auto root = [&](ir::TensorId t) { return p.root_of[static_cast<size_t>(t)]; };
    size_t at = p.stages[0].slot_offset.at(root(inputs ? first.inputs[0] : first.outputs[0]));
    for (ir::OpId member : p.buckets[0].ops) {
      const ir::TensorId t = inputs ? m.graph.op(member).inputs[0] : m.graph.op(member).outputs[0];
      EXPECT_EQ(p.stages[0].slot_offset.at(root(t)), at) << (inputs ? "input of op " : "output of op ") << member;
      at += memory::align_up(m.graph.tensor(t).bytes());
    }
  }
  EXPECT_LT(p.devices[0].scratch_bytes, kW0 + kB0 + kW1 + kB1);
  // Without buckets every all-reduce is a RunOp of its own.
  const Program alone = compile(m.graph, place(m.graph, {}), {});
  EXPECT_TRUE(alone.buckets.empty());
  EXPECT_EQ(alone.stages[0].actions[static_cast<int>(ir::Phase::Update)].size(), 8u);
}

TEST(GradientBuckets, AccumulatedGradientsArePackedIntoScratchInstead) {
  // With gradient accumulation the update reads the gradients' accumulators, which live
  // apart: the bucket packs them.
  testing::Mlp m = build_mlp(2, 4);
  CompileOptions o;
  o.gradient_bucket_bytes = size_t{25} << 20;
  o.micro_batches = 2;
  const Program p = compile(m.graph, place(m.graph, {}), o);
  ASSERT_EQ(p.buckets.size(), 1u);
  EXPECT_FALSE(p.buckets[0].view);
  EXPECT_GE(p.devices[0].scratch_bytes, kW0 + kB0 + kW1 + kB1);
}

}  // namespace
}  // namespace plexus::runtime
