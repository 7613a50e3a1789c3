// Gradient buckets (core/compile/gradient_buckets.h): which all-reduces a bucket takes, in
// what order, where the cap closes it, the rewrite into one bucket op, and its span layout.
#include "core/compile/gradient_buckets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "core/compile/passes.h"
#include "core/compile/program.h"
#include "core/ops/kernel_def.h"
#include "core/ir/autodiff.h"
#include "tests/runtime/data_parallel_mlp.h"
#include "tests/runtime/test_graphs.h"

namespace plexus::compile {
namespace {

namespace testing = runtime::testing;

using testing::build_mlp;
using testing::f32;

// The MLP of tests/runtime/data_parallel_mlp.h at R=2: w0 [12,5] (240 bytes), b0 [5] (20),
// w1 [5,3] (60), b1 [3] (12), each gradient mean-reduced by a replicated_all_reduce.
constexpr size_t kW0 = 240, kB0 = 20, kW1 = 60, kB1 = 12;

// The all-reduce of each parameter's gradient, in parameter order.
std::vector<ir::OpId> all_reduces(const ir::Graph& g) {
  std::vector<ir::OpId> out;
  for (size_t o = 0; o < g.num_ops(); ++o) {
    if (g.op(static_cast<ir::OpId>(o)).schema->name == "replicated_all_reduce") out.push_back(static_cast<ir::OpId>(o));
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

/// The bucket ops of g (the rewrite's).
std::vector<ir::OpId> bucket_ops(const ir::Graph& g) {
  std::vector<ir::OpId> out;
  for (size_t o = 0; o < g.num_ops(); ++o) {
    if (g.op(static_cast<ir::OpId>(o)).schema->name.starts_with("replicated_all_reduce_bucket")) {
      out.push_back(static_cast<ir::OpId>(o));
    }
  }
  return out;
}

TEST(GradientBuckets, TheRewriteMakesOneBucketOpAtItsFirstMembersPlace) {
  testing::Mlp m = build_mlp(2, 4);
  const std::vector<ir::OpId> members = all_reduces(m.graph);
  const std::vector<GradientBucket> planned = buckets_of(m.graph, size_t{25} << 20);
  ASSERT_EQ(planned.size(), 1u);
  std::vector<ir::TensorId> inputs, outputs;
  for (ir::OpId o : planned[0].ops) {
    inputs.push_back(m.graph.op(o).inputs[0]);
    outputs.push_back(m.graph.op(o).outputs[0]);
  }
  ir::Graph g = m.graph;
  std::vector<int32_t> op_stage = place(g, {}).op_stage;
  EXPECT_EQ(fuse_gradient_buckets(g, op_stage, size_t{25} << 20), 1u);
  EXPECT_EQ(op_stage, place(g, {}).op_stage) << "the removed members' stages dropped";
  ASSERT_EQ(bucket_ops(g), std::vector<ir::OpId>{*std::min_element(members.begin(), members.end())});
  const ir::Op& bucket = g.op(bucket_ops(g)[0]);
  EXPECT_EQ(bucket.schema->name, "replicated_all_reduce_bucket");
  EXPECT_EQ(bucket.inputs, inputs) << "in the order the gradients are computed";
  EXPECT_EQ(bucket.outputs, outputs);
  EXPECT_EQ(bucket.attrs.get_string("op"), "mean");
  EXPECT_EQ(ops::scratch_bytes(g, bucket), kW0 + kB0 + kW1 + kB1) << "what packing them takes";
  EXPECT_EQ(g.num_ops(), m.graph.num_ops() - 3);
  EXPECT_TRUE(all_reduces(g).empty());
  EXPECT_EQ(fuse_gradient_buckets(g, op_stage, size_t{25} << 20), 0u) << "idempotent";
}

TEST(GradientBuckets, TheProgramRunsABucketOpOnItsMembersLaidOutAsOneSpan) {
  testing::Mlp m = build_mlp(2, 4);
  CompileOptions o;
  o.gradient_bucket_bytes = size_t{25} << 20;
  ir::Graph g = m.graph;
  const Program p = compile(g, place(g, {}), o);
  ASSERT_EQ(bucket_ops(g).size(), 1u);
  const ir::Op& bucket = g.op(bucket_ops(g)[0]);
  const std::vector<Action>& update = p.stages[0].actions[static_cast<int>(ir::Phase::Update)];
  EXPECT_EQ(update.size(), 5u) << "the bucket op and the four SGD updates";
  EXPECT_EQ(update.front().kind, ActionKind::RunOp);
  EXPECT_EQ(update.front().index, bucket_ops(g)[0]) << "before the first update reads a result";
  // gradient_as_bucket_view: inputs one after the other at aligned offsets, outputs too,
  // and no scratch to pack them into.
  EXPECT_EQ(p.span_ops, std::set<ir::OpId>{bucket_ops(g)[0]});
  for (const bool inputs : {true, false}) {
    const auto root = [&](ir::TensorId t) { return p.root_of[static_cast<size_t>(t)]; };
    const std::vector<ir::TensorId>& tensors = inputs ? bucket.inputs : bucket.outputs;
    size_t at = p.stages[0].slot_offset.at(root(tensors[0]));
    for (ir::TensorId t : tensors) {
      EXPECT_EQ(p.stages[0].slot_offset.at(root(t)), at) << (inputs ? "input " : "output ") << g.tensor(t).name;
      at += memory::align_up(g.tensor(t).bytes());
    }
  }
  EXPECT_LT(p.devices[0].scratch_bytes, kW0 + kB0 + kW1 + kB1);
  // Without buckets every all-reduce is a RunOp of its own.
  ir::Graph plain = m.graph;
  const Program alone = compile(plain, place(plain, {}), {});
  EXPECT_TRUE(bucket_ops(plain).empty());
  EXPECT_EQ(alone.stages[0].actions[static_cast<int>(ir::Phase::Update)].size(), 8u);
}

TEST(GradientBuckets, AccumulatedGradientsArePackedIntoScratchInstead) {
  // With gradient accumulation the update reads the gradients' accumulators, which live
  // apart: the bucket packs them.
  testing::Mlp m = build_mlp(2, 4);
  CompileOptions o;
  o.gradient_bucket_bytes = size_t{25} << 20;
  o.micro_batches = 2;
  ir::Graph g = m.graph;
  const Program p = compile(g, place(g, {}), o);
  ASSERT_EQ(bucket_ops(g).size(), 1u);
  EXPECT_TRUE(p.span_ops.empty());
  EXPECT_GE(p.devices[0].scratch_bytes, kW0 + kB0 + kW1 + kB1);
}

}  // namespace
}  // namespace plexus::compile
