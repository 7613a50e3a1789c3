// Gradient building blocks (core/ops/common/grad_helpers.cpp): unbroadcast sums a gradient over
// the dims numpy broadcast (leading dims and dims of 1) and reshapes it to the target;
// scalar constants hold one float32.
#include "core/ops/common/grad_helpers.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/ir/graph.h"

namespace plexus::ops {
namespace {

struct Fixture {
  ir::Graph graph;
  ir::TensorId x = graph.stream(graph.add_h2d_stream("x", ir::DType::Float32, {2, 3, 4})).tensor;
  ir::Op forward;
  Fixture() {
    graph.add_op("relu", {x}, {});
    forward = graph.op(0);
  }
  ir::GradContext context() { return ir::GradContext{graph, forward, {x}, {true}}; }
};

TEST(Unbroadcast, EqualShapesAddNothing) {
  Fixture f;
  ir::GradContext ctx = f.context();
  const size_t ops = f.graph.num_ops();
  EXPECT_EQ(unbroadcast(ctx, f.x, {2, 3, 4}), f.x);
  EXPECT_EQ(f.graph.num_ops(), ops);
}

TEST(Unbroadcast, SumsLeadingAndSizeOneDimsThenReshapes) {
  Fixture f;
  ir::GradContext ctx = f.context();
  const ir::TensorId g = unbroadcast(ctx, f.x, {3, 1});
  EXPECT_EQ(f.graph.tensor(g).shape, (ir::Shape{3, 1}));
  const ir::Op& reshape = f.graph.op(f.graph.tensor(g).producer);
  EXPECT_EQ(reshape.schema->name, "reshape");
  const ir::Op& sum = f.graph.op(f.graph.tensor(reshape.inputs[0]).producer);
  EXPECT_EQ(sum.schema->name, "reduce_sum");
  EXPECT_EQ(sum.attrs.get_ints("axes"), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(sum.attrs.get_int("keepdims"), 1);
}

TEST(Unbroadcast, OnlyARankDifferenceSumsTheLeadingDims) {
  Fixture f;
  ir::GradContext ctx = f.context();
  const ir::TensorId g = unbroadcast(ctx, f.x, {4});
  EXPECT_EQ(f.graph.tensor(g).shape, (ir::Shape{4}));
  const ir::Op& reshape = f.graph.op(f.graph.tensor(g).producer);
  const ir::Op& sum = f.graph.op(f.graph.tensor(reshape.inputs[0]).producer);
  EXPECT_EQ(sum.attrs.get_ints("axes"), (std::vector<int64_t>{0, 1}));
}

TEST(Unbroadcast, ToAScalarSumsEverything) {
  Fixture f;
  ir::GradContext ctx = f.context();
  const ir::TensorId g = unbroadcast(ctx, f.x, {});
  EXPECT_EQ(f.graph.tensor(g).shape, (ir::Shape{}));
}

TEST(ScalarConstant, HoldsOneFloat32) {
  ir::Graph graph;
  const ir::TensorId c = scalar_constant(graph, -2.5f);
  const ir::TensorInfo& t = graph.tensor(c);
  EXPECT_EQ(t.kind, ir::TensorKind::Constant);
  EXPECT_EQ(t.dtype, ir::DType::Float32);
  EXPECT_EQ(t.shape, (ir::Shape{}));
  ASSERT_EQ(t.data.size(), sizeof(float));
  float value = 0;
  std::memcpy(&value, t.data.data(), sizeof(float));
  EXPECT_EQ(value, -2.5f);
}

}  // namespace
}  // namespace plexus::ops
