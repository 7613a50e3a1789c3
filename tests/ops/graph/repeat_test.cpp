// repeat(args...; graph, count) (core/ops/graph/repeat.cpp): the body graph run `count` times,
// carried inputs fed by the outputs, the others the same every time; bit for bit the same
// as the body's ops written out `count` times, and so is its gradient (repeat_grad), which
// finite differences confirm; the op's scratch does not depend on count. Sliced inputs and
// stacked outputs (a scan) equal the unrolled body reading and writing one slice per
// iteration, gradients included.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/ir/autodiff.h"
#include "core/ops/kernel_def.h"
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
  const auto scratch = [&r](ir::TensorId t) { return scratch_bytes(r.g, r.g.op(r.g.tensor(t).producer)); };
  EXPECT_EQ(scratch(ten), scratch(million));
  EXPECT_GT(scratch(ten), 0u);
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
  expect_finite_differences(
      {kX, kW, kA}, [](const std::vector<Value>& in) { return loss_and_gradients(in[0], in[1], in[2], 4, false); },
      1e-2, 2e-3);
}

TEST(Repeat, ZeroCountPassesTheGradientThrough) {
  const std::vector<Value> out = loss_and_gradients(kX, kW, kA, 0, false);
  expect_equal(out[1], f32(kX.shape, std::vector<double>(kX.data.size(), 1.0)), "d loss / d x_0 with count 0");
  expect_equal(out[2], f32(kW.shape, std::vector<double>(kW.data.size(), 0.0)), "d loss / d W with count 0");
}

// ---- sliced inputs and stacked outputs ----

/// Slice n of v, a [count, ...] value.
Value slice_of(const Value& v, int64_t n) {
  Value out{v.dtype, ir::Shape(v.shape.begin() + 1, v.shape.end()), {}};
  const auto size = static_cast<int64_t>(v.data.size()) / v.shape[0];
  out.data.assign(v.data.begin() + n * size, v.data.begin() + (n + 1) * size);
  return out;
}

/// The body "scan"(s, h, W): h' = tanh(h @ W) + s carried, o = tanh(h') stacked; s sliced
/// (first, so that the carried input h is the first input not sliced, not the first input).
ir::GraphId scan_body(ir::Graph& g, const Value& h, const Value& w) {
  const ir::GraphId body = g.create_subgraph("scan");
  const ir::TensorId bs = g.add_graph_input(body, "s", ir::DType::Float32, h.shape);
  const ir::TensorId bh = g.add_graph_input(body, "h", ir::DType::Float32, h.shape);
  const ir::TensorId bw = g.add_graph_input(body, "W", ir::DType::Float32, w.shape);
  g.begin_graph(body);
  const ir::TensorId next =
      g.add_op("add", {g.add_op("tanh", {g.add_op("matmul", {bh, bw}, {}).front()}, {}).front(), bs}, {}).front();
  g.add_graph_output(body, next);
  g.add_graph_output(body, g.add_op("tanh", {next}, {}).front());
  g.end_graph();
  return body;
}

ir::Attributes scan_attrs(ir::GraphId body, int64_t count) {
  return make_attrs({{"graph", int64_t{body}}, {"count", count}, {"sliced", std::vector<int64_t>{0}}, {"stacked", int64_t{1}}});
}

/// loss = sum(h_N) + sum(o * R) of the scan over slices S (count of them), by a repeat or
/// written out; returns h_N, o (slice by slice when written out), then the gradients of h_0,
/// W and S (slice by slice when written out).
std::vector<Value> scan(const Value& h, const Value& w, const Value& s, const Value& r, bool unrolled) {
  ir::Graph g;
  const int64_t count = s.shape[0];
  std::vector<ir::TensorId> outputs, wrt;
  if (unrolled) {
    std::vector<Value> inputs{h, w};
    for (int64_t n = 0; n < count; ++n) inputs.push_back(slice_of(s, n));
    for (int64_t n = 0; n < count; ++n) inputs.push_back(slice_of(r, n));
    const std::vector<ir::TensorId> in = add_inputs(g, inputs);
    ir::TensorId y = in[0];
    std::vector<ir::TensorId> os;
    for (int64_t n = 0; n < count; ++n) {
      y = g.add_op("add", {g.add_op("tanh", {g.add_op("matmul", {y, in[1]}, {}).front()}, {}).front(), in[2 + n]}, {}).front();
      os.push_back(g.add_op("tanh", {y}, {}).front());
    }
    ir::TensorId loss = g.add_op("reduce_sum", {y}, {}).front();
    for (int64_t n = 0; n < count; ++n) {
      const ir::TensorId weighted = g.add_op("mul", {os[n], in[2 + count + n]}, {}).front();
      loss = g.add_op("add", {loss, g.add_op("reduce_sum", {weighted}, {}).front()}, {}).front();
    }
    outputs = {y};
    outputs.insert(outputs.end(), os.begin(), os.end());
    wrt.assign(in.begin(), in.begin() + 2 + count);
    for (ir::TensorId grad : ir::autodiff(g, loss, wrt)) outputs.push_back(grad);
  } else {
    const std::vector<ir::TensorId> in = add_inputs(g, {h, w, s, r});
    const ir::GraphId body = scan_body(g, h, w);
    const std::vector<ir::TensorId> out = g.add_op("repeat", {in[2], in[0], in[1]}, scan_attrs(body, count));
    const ir::TensorId weighted = g.add_op("reduce_sum", {g.add_op("mul", {out[1], in[3]}, {}).front()}, {}).front();
    const ir::TensorId loss = g.add_op("add", {g.add_op("reduce_sum", {out[0]}, {}).front(), weighted}, {}).front();
    outputs = out;
    for (ir::TensorId grad : ir::autodiff(g, loss, std::vector<ir::TensorId>{in[0], in[1], in[2]})) outputs.push_back(grad);
  }
  return evaluate(g, outputs);
}

const Value kS = random_f32({4, 2, 3}, 7);
const Value kR = random_f32({4, 2, 3}, 8);

TEST(Repeat, SlicedInputsAndStackedOutputsEqualTheUnrolledBodyBitForBit) {
  const std::vector<Value> repeated = scan(kX, kW, kS, kR, false);
  const std::vector<Value> unrolled = scan(kX, kW, kS, kR, true);
  const int64_t count = kS.shape[0];
  ASSERT_EQ(repeated.size(), 5u);
  ASSERT_EQ(unrolled.size(), static_cast<size_t>(1 + count + 2 + count));
  EXPECT_EQ(repeated[1].shape, (ir::Shape{4, 2, 3}));
  EXPECT_EQ(repeated[4].shape, (ir::Shape{4, 2, 3}));
  expect_equal(repeated[0], unrolled[0], "h_N");
  for (int64_t n = 0; n < count; ++n) {
    expect_equal(slice_of(repeated[1], n), unrolled[1 + n], "stacked output, iteration " + std::to_string(n));
    expect_equal(slice_of(repeated[4], n), unrolled[1 + count + 2 + n], "gradient of slice " + std::to_string(n));
  }
  expect_equal(repeated[2], unrolled[1 + count], "gradient of h_0");
  expect_equal(repeated[3], unrolled[1 + count + 1], "gradient of W");
}

TEST(Repeat, RefusesBadSlicesAndStacks) {
  ir::Graph g;
  const std::vector<ir::TensorId> in = add_inputs(g, {kX, kW, kS, kX});
  const ir::GraphId body = scan_body(g, kX, kW);
  auto refuse = [&](std::vector<ir::TensorId> args, ir::Attributes attrs, ir::ErrorCode code, const std::string& part) {
    try {
      g.add_op("repeat", std::move(args), std::move(attrs));
      ADD_FAILURE() << "no error for " << part;
    } catch (const ir::Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_THAT(e.what(), HasSubstr(part));
    }
  };
  const auto attrs = [&](std::vector<int64_t> sliced, int64_t stacked, int64_t count) {
    return make_attrs({{"graph", int64_t{body}}, {"count", count}, {"sliced", sliced}, {"stacked", stacked}});
  };
  const std::vector<ir::TensorId> args{in[2], in[0], in[1]};
  refuse(args, attrs({0}, 1, 5), ir::ErrorCode::ShapeMismatch, "which is float32[5,2,3] (sliced: one float32[2,3] per iteration)");
  refuse({in[3], in[0], in[1]}, attrs({0}, 1, 4), ir::ErrorCode::ShapeMismatch, "argument 0 for input 'scan/s' of graph 'scan'");
  refuse(args, attrs({0}, 1, 0), ir::ErrorCode::InvalidArgument, "count 0 with sliced inputs or stacked outputs");
  refuse(args, attrs({0, 0}, 1, 4), ir::ErrorCode::InvalidArgument, "sliced input 0 of graph 'scan' must be a distinct");
  refuse(args, attrs({3}, 1, 4), ir::ErrorCode::InvalidArgument, "sliced input 3");
  refuse(args, attrs({0}, 3, 4), ir::ErrorCode::InvalidArgument, "stacked 3 must be in [0, 2]");
  refuse(args, attrs({0}, 0, 4), ir::ErrorCode::ShapeMismatch, "output 1 of graph 'scan'");
  refuse(args, attrs({0, 1, 2}, 1, 4), ir::ErrorCode::InvalidArgument, "has 0 inputs that are not sliced and 1 carried");
}

}  // namespace
}  // namespace plexus::ops::test
