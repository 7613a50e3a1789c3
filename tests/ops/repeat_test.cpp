// repeat(args...; graph, count) (core/ops/repeat.cpp): the body graph run `count` times,
// carried inputs fed by the outputs, the others the same every time; bit for bit the same
// as the body's op written out `count` times; the op's scratch does not depend on count.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/ir/autodiff.h"
#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

/// Body "step"(x, a, b): x * a + b, three ops (a constant c is added too, then subtracted,
/// so that a body constant is read every iteration).
struct Program {
  ir::Graph g;
  ir::GraphId body = 0;
  std::vector<ir::TensorId> args;
};

Program program(const Value& x, const Value& a, const Value& b) {
  Program p;
  p.args = add_inputs(p.g, {x, a, b});
  p.body = p.g.create_subgraph("step");
  const ir::TensorId bx = p.g.add_graph_input(p.body, "x", ir::DType::Float32, x.shape);
  const ir::TensorId ba = p.g.add_graph_input(p.body, "a", ir::DType::Float32, a.shape);
  const ir::TensorId bb = p.g.add_graph_input(p.body, "b", ir::DType::Float32, b.shape);
  p.g.begin_graph(p.body);
  const ir::TensorId y = p.g.add_op("add", {p.g.add_op("mul", {bx, ba}, {}).front(), bb}, {}).front();
  p.g.add_graph_output(p.body, y);
  p.g.end_graph();
  return p;
}

ir::Attributes repeat_attrs(ir::GraphId body, int64_t count) {
  return make_attrs({{"graph", int64_t{body}}, {"count", count}});
}

const Value kX = f32({2, 3}, {0.5, -1.0, 2.0, 0.25, 3.0, -0.75});
const Value kA = f32({3}, {0.9, 1.1, -0.5});
const Value kB = f32({2, 3}, {0.1, 0.2, 0.3, -0.1, -0.2, -0.3});

TEST(Repeat, EqualsTheBodyWrittenOutCountTimes) {
  for (int64_t count : {0, 1, 7}) {
    Program r = program(kX, kA, kB);
    const ir::TensorId repeated = r.g.add_op("repeat", r.args, repeat_attrs(r.body, count)).front();
    ir::TensorId unrolled = r.args[0];
    for (int64_t n = 0; n < count; ++n) {
      unrolled = r.g.add_op("add", {r.g.add_op("mul", {unrolled, r.args[1]}, {}).front(), r.args[2]}, {}).front();
    }
    const std::vector<Value> out = evaluate(r.g, {repeated, unrolled});
    expect_equal(out[0], out[1], "count " + std::to_string(count));
  }
}

TEST(Repeat, ScratchDoesNotDependOnCount) {
  Program r = program(kX, kA, kB);
  const ir::TensorId ten = r.g.add_op("repeat", r.args, repeat_attrs(r.body, 10)).front();
  const ir::TensorId million = r.g.add_op("repeat", r.args, repeat_attrs(r.body, 1000000)).front();
  EXPECT_EQ(r.g.op(r.g.tensor(ten).producer).scratch_bytes, r.g.op(r.g.tensor(million).producer).scratch_bytes);
  EXPECT_GT(r.g.op(r.g.tensor(ten).producer).scratch_bytes, 0u);
}

TEST(Repeat, RefusesBadBodiesAndArguments) {
  Program r = program(kX, kA, kB);
  auto refuse = [&](std::vector<ir::TensorId> args, ir::Attributes attrs, ir::ErrorCode code, const std::string& part) {
    try {
      r.g.add_op("repeat", std::move(args), std::move(attrs));
      ADD_FAILURE() << "no error for " << part;
    } catch (const ir::Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_THAT(e.what(), HasSubstr(part));
    }
  };
  refuse({r.args[0], r.args[1]}, repeat_attrs(r.body, 2), ir::ErrorCode::InvalidArgument, "graph 'step' has 3 inputs");
  refuse({r.args[0], r.args[0], r.args[2]}, repeat_attrs(r.body, 2), ir::ErrorCode::ShapeMismatch, "'step/a'");
  refuse(r.args, repeat_attrs(r.body, -1), ir::ErrorCode::InvalidArgument, "count -1 must be >= 0");
  r.g.begin_graph(r.body);  // the body repeating itself
  const ir::Subgraph body = r.g.subgraph(r.body);
  refuse(body.inputs, repeat_attrs(r.body, 2), ir::ErrorCode::InvalidArgument, "would run itself");
  r.g.end_graph();
}

TEST(Repeat, AutodiffThroughARepeatIsRefusedByName) {
  Program r = program(kX, kA, kB);
  const ir::TensorId y = r.g.add_op("repeat", r.args, repeat_attrs(r.body, 3)).front();
  const ir::TensorId loss = r.g.add_op("reduce_sum", {y}, {}).front();
  try {
    ir::autodiff(r.g, loss, std::vector<ir::TensorId>{r.args[0]});
    ADD_FAILURE() << "autodiff went through a repeat";
  } catch (const ir::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("'repeat#0'"));
    EXPECT_THAT(e.what(), HasSubstr("has no gradient"));
  }
}

}  // namespace
}  // namespace plexus::ops::test
