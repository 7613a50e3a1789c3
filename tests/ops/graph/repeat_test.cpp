// repeat(args...; graph, count) (core/ops/graph/repeat.cpp): the body graph run `count` times,
// carried inputs fed by the outputs, the others the same every time; bit for bit the same
// as the body's ops written out `count` times, and so is its gradient (repeat_grad), which
// finite differences confirm; the op's scratch does not depend on count.
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

/// loss = sum(x_N), x_{n+1} = tanh(x_n @ W) + b, by a repeat of that body or written out
/// `count` times, and the gradients autodiff gives for x_0, W and b.
std::vector<Value> loss_and_gradients(const Value& x, const Value& w, const Value& b, int64_t count, bool unrolled) {
  ir::Graph g;
  const std::vector<ir::TensorId> args = add_inputs(g, {x, w, b});
  ir::TensorId y = args[0];
  if (unrolled) {
    for (int64_t n = 0; n < count; ++n) {
      const ir::TensorId h = g.add_op("tanh", {g.add_op("matmul", {y, args[1]}, {}).front()}, {}).front();
      y = g.add_op("add", {h, args[2]}, {}).front();
    }
  } else {
    const ir::GraphId body = g.create_subgraph("step");
    const ir::TensorId bx = g.add_graph_input(body, "x", ir::DType::Float32, x.shape);
    const ir::TensorId bw = g.add_graph_input(body, "W", ir::DType::Float32, w.shape);
    const ir::TensorId bb = g.add_graph_input(body, "b", ir::DType::Float32, b.shape);
    g.begin_graph(body);
    const ir::TensorId h = g.add_op("tanh", {g.add_op("matmul", {bx, bw}, {}).front()}, {}).front();
    g.add_graph_output(body, g.add_op("add", {h, bb}, {}).front());
    g.end_graph();
    y = g.add_op("repeat", args, repeat_attrs(body, count)).front();
  }
  const ir::TensorId loss = g.add_op("reduce_sum", {y}, {}).front();
  std::vector<ir::TensorId> outputs{loss};
  for (ir::TensorId grad : ir::autodiff(g, loss, args)) outputs.push_back(grad);
  return evaluate(g, outputs);
}

const Value kW = f32({3, 3}, {0.5, -0.4, 0.3, 0.2, 0.6, -0.1, -0.3, 0.1, 0.4});

TEST(Repeat, GradientEqualsTheUnrolledBodysBitForBit) {
  for (int64_t count : {1, 5}) {  // count 0 unrolled is no function of W: autodiff refuses it
    const std::vector<Value> repeated = loss_and_gradients(kX, kW, kA, count, false);
    const std::vector<Value> unrolled = loss_and_gradients(kX, kW, kA, count, true);
    for (size_t i = 0; i < repeated.size(); ++i) {
      expect_equal(repeated[i], unrolled[i], "output " + std::to_string(i) + " at count " + std::to_string(count));
    }
  }
}

TEST(Repeat, GradientMatchesFiniteDifferences) {
  const std::vector<Value> inputs{kX, kW, kA};
  const std::vector<Value> at = loss_and_gradients(kX, kW, kA, 4, false);
  const double h = 1e-2;
  for (size_t which = 0; which < inputs.size(); ++which) {
    for (size_t i = 0; i < inputs[which].data.size(); ++i) {
      std::vector<Value> up = inputs, down = inputs;
      up[which].data[i] += h;
      down[which].data[i] -= h;
      const double fd = (loss_and_gradients(up[0], up[1], up[2], 4, false)[0].data[0] -
                         loss_and_gradients(down[0], down[1], down[2], 4, false)[0].data[0]) /
                        (2 * h);
      EXPECT_NEAR(at[1 + which].data[i], fd, 2e-3) << "input " << which << " element " << i;
    }
  }
}

TEST(Repeat, ZeroCountPassesTheGradientThrough) {
  const std::vector<Value> out = loss_and_gradients(kX, kW, kA, 0, false);
  expect_equal(out[1], f32(kX.shape, std::vector<double>(kX.data.size(), 1.0)), "d loss / d x_0 with count 0");
  expect_equal(out[2], f32(kW.shape, std::vector<double>(kW.data.size(), 0.0)), "d loss / d W with count 0");
}

}  // namespace
}  // namespace plexus::ops::test
