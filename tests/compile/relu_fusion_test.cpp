// Relu epilogues (core/compile/relu_fusion.h): which relus fuse into their producer, and the
// rewrite into `<op>_relu` + `alias`, which stores y and relu(y) in one buffer.
#include "core/compile/relu_fusion.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/compile/passes.h"
#include "core/compile/program.h"
#include "core/ir/autodiff.h"
#include "tests/runtime/test_graphs.h"

namespace plexus::compile {
namespace {

namespace testing = runtime::testing;

using testing::f32;

ir::TensorId op(ir::Graph& g, const char* type, std::vector<ir::TensorId> in, ir::Attributes attrs = {}) {
  return g.add_op(type, std::move(in), std::move(attrs)).front();
}

ir::Attributes pool2() {
  ir::Attributes a;
  a.set("kernel", std::vector<int64_t>{2});
  return a;
}

/// A conv layer on an h2d stream x [2,1,6,6]: conv2d 3x3 with 2 filters and bias, then
/// seed 002's relu -> max_pool2d or seed 003's max_pool2d -> relu.
struct ConvLayer {
  ir::Graph g;
  ir::StreamId x;
  ir::TensorId w, b, conv, pool, relu;

  explicit ConvLayer(bool pool_first) {
    x = g.add_h2d_stream("x", ir::DType::Float32, {2, 1, 6, 6});
    w = g.add_variable("w", ir::DType::Float32, {2, 1, 3, 3}, f32(std::vector<float>(18, 0.1f)));
    b = g.add_variable("b", ir::DType::Float32, {2}, f32({0.5f, -0.5f}));
    conv = op(g, "conv2d", {g.stream(x).tensor, w, b});
    if (pool_first) {
      pool = op(g, "max_pool2d", {conv}, pool2());
      relu = op(g, "relu", {pool});
    } else {
      relu = op(g, "relu", {conv});
      pool = op(g, "max_pool2d", {relu}, pool2());
    }
  }
  /// The last tensor of the layer.
  ir::TensorId out() const { return g.tensor(relu).producer > g.tensor(pool).producer ? relu : pool; }
  /// Adds a loss on the layer's output and autodiff for w and b.
  void train() {
    const ir::TensorId loss = op(g, "reduce_sum", {op(g, "mul", {out(), out()})});
    const std::vector<ir::TensorId> params{w, b};
    ir::autodiff(g, loss, params);
  }
  std::vector<ReluFusion> fusions() const { return plan_relu_fusions(g, place(g, {}).op_stage); }
  ir::OpId producer(ir::TensorId t) const { return g.tensor(t).producer; }
};

TEST(ReluFusion, ConvThenReluAndPoolThenReluFuseIntoTheirProducer) {
  for (const bool pool_first : {false, true}) {
    SCOPED_TRACE(pool_first ? "max_pool2d -> relu (seed 003)" : "conv2d -> relu (seed 002)");
    ConvLayer m(pool_first);
    const std::vector<ReluFusion> f = m.fusions();
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].relu, m.producer(m.relu));
    EXPECT_EQ(f[0].producer, m.producer(pool_first ? m.pool : m.conv));
  }
}

TEST(ReluFusion, TrainingGraphsStillFuseBecauseNoGradientReadsTheReluInput) {
  // relu_grad reads the relu's output; the max_pool2d gradient folds the relu in and reads
  // the conv output (relu first: the relu's output).
  for (const bool pool_first : {false, true}) {
    SCOPED_TRACE(pool_first ? "max_pool2d -> relu" : "conv2d -> relu");
    ConvLayer m(pool_first);
    m.train();
    EXPECT_EQ(m.fusions().size(), 1u);
    for (size_t o = 0; o < m.g.num_ops(); ++o) {
      EXPECT_NE(m.g.op(static_cast<ir::OpId>(o)).schema->name, "relu_grad") << "the pool gradient folds relu's in";
    }
  }
}

TEST(ReluFusion, ARelusInputReadByAnotherOpOrStreamedOrWithoutEpilogueDoesNotFuse) {
  {
    ConvLayer m(false);
    op(m.g, "neg", {m.conv});  // the conv output is read twice
    EXPECT_TRUE(m.fusions().empty());
  }
  {
    ConvLayer m(false);
    m.g.add_d2h_stream("conv", m.conv);  // the host reads the conv output
    EXPECT_TRUE(m.fusions().empty());
  }
  {
    ir::Graph g;  // matmul has no relu epilogue
    const ir::TensorId x = g.stream(g.add_h2d_stream("x", ir::DType::Float32, {2, 3})).tensor;
    const ir::TensorId w = g.add_variable("w", ir::DType::Float32, {3, 2}, f32(std::vector<float>(6, 1.0f)));
    op(g, "relu", {op(g, "matmul", {x, w})});
    EXPECT_TRUE(plan_relu_fusions(g, place(g, {}).op_stage).empty());
  }
}

TEST(ReluFusion, AReluOnAnotherStageThanItsProducerDoesNotFuse) {
  ConvLayer m(false);
  std::vector<int32_t> stage(m.g.num_ops(), 0);
  stage[static_cast<size_t>(m.producer(m.relu))] = 1;
  EXPECT_TRUE(plan_relu_fusions(m.g, stage).empty());
}

TEST(ReluFusion, TheRewriteMakesTheFusedOpAndAnAliasSoTheProducersOutputIsStoredOnce) {
  for (const bool pool_first : {false, true}) {
    SCOPED_TRACE(pool_first ? "max_pool2d -> relu (seed 003)" : "conv2d -> relu (seed 002)");
    ConvLayer m(pool_first);
    // No conv -> max-pool group: a second reader of the conv output, or the relu's output
    // streamed to the host (which the fusion allows).
    if (pool_first) op(m.g, "neg", {m.conv});
    if (!pool_first) m.g.add_d2h_stream("relu", m.relu);
    m.train();
    const ir::TensorId t = pool_first ? m.pool : m.conv;  // the producer's output
    ir::Graph g = m.g;
    const Program p = compile(g, place(g, {}), {});
    ASSERT_EQ(std::count_if(g.ops().begin(), g.ops().end(),
                            [](const ir::Op& o) { return o.schema->name.starts_with("conv2d_relu_max_pool2d"); }),
              0);
    EXPECT_EQ(g.op(m.producer(t)).schema->name, pool_first ? "max_pool2d_relu" : "conv2d_relu");
    EXPECT_EQ(g.op(m.producer(m.relu)).schema->name, "alias");
    EXPECT_EQ(g.storage_root(m.relu), t) << "the relu's output is the producer's buffer";
    EXPECT_EQ(p.stages[0].slot_offset.count(t), 1u);
    EXPECT_EQ(p.stages[0].slot_offset.count(m.relu), 0u) << "one buffer for y and relu(y)";
    EXPECT_TRUE(plan_relu_fusions(g, place(g, {}).op_stage).empty()) << "nothing left to fuse";
    EXPECT_EQ(compile(g, place(g, {}), {}).stages[0].slot_offset, p.stages[0].slot_offset) << "idempotent";
  }
}

}  // namespace
}  // namespace plexus::compile
