// call(args...; graph) (core/ops/graph/call.cpp), a call site that reuses code: the same
// bits as the inlined call (ir::call's default), forward and gradient (call_grad), which
// finite differences confirm; the graph's kernels bound once per device however many call
// sites run it; its scratch the graph's own plan; modified inputs and recursion refused.
#include <cstring>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/ir/autodiff.h"
#include "core/ir/call.h"
#include "core/ir/error.h"
#include "core/ops/graph/bound_graph.h"
#include "core/ops/kernel_def.h"
#include "core/ops/op_def.h"
#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

/// Kernels made by the test op "bound_count" (a copy of its input; its gradient passes
/// through): how often a graph holding it was bound.
int g_bound = 0;

OpDef bound_count_def() {
  OpDef d;
  d.name = "bound_count";
  d.infer = [](const ir::InferContext& ctx) { return ir::InferResult{{{ctx.dtype(0), ctx.shape(0)}}}; };
  d.kernel = [](const KernelContext& ctx) -> Kernel {
    ++g_bound;
    return [from = ctx.in[0], to = ctx.out[0], bytes = ctx.inputs[0]->bytes()] { std::memcpy(to, from, bytes); };
  };
  d.grad = [](ir::GradContext& ctx) { return std::vector<ir::TensorId>{ctx.output_grads[0]}; };
  return d;
}
const OpRegistration bound_count_op{bound_count_def()};

/// Graph "layer"(x, W, b): tanh(x @ W) + b, then bound_count.
ir::GraphId layer(ir::Graph& g, const ir::Shape& x, const ir::Shape& w, const ir::Shape& b) {
  const ir::GraphId body = g.create_subgraph("layer");
  const ir::TensorId bx = g.add_graph_input(body, "x", ir::DType::Float32, x);
  const ir::TensorId bw = g.add_graph_input(body, "W", ir::DType::Float32, w);
  const ir::TensorId bb = g.add_graph_input(body, "b", ir::DType::Float32, b);
  g.begin_graph(body);
  const ir::TensorId h = g.add_op("tanh", {g.add_op("matmul", {bx, bw}, {}).front()}, {}).front();
  g.add_graph_output(body, g.add_op("bound_count", {g.add_op("add", {h, bb}, {}).front()}, {}).front());
  g.end_graph();
  return body;
}

const Value kX = f32({2, 3}, {0.5, -1.0, 2.0, 0.25, 3.0, -0.75});
const Value kW = f32({3, 3}, {0.5, -0.4, 0.3, 0.2, 0.6, -0.1, -0.3, 0.1, 0.4});
const Value kB = f32({3}, {0.1, -0.2, 0.05});

/// layer^calls(x) for args {x, W, b}: each call of `body` feeding the next.
ir::TensorId chained(ir::Graph& g, ir::GraphId body, const std::vector<ir::TensorId>& args, int calls,
                     bool reuse_code) {
  ir::TensorId y = args[0];
  for (int n = 0; n < calls; ++n) {
    y = g.call_site(ir::call(g, body, {y, args[1], args[2]}, {}, reuse_code)).outputs.front();
  }
  return y;
}

/// The loss sum(layer^calls(x)) and its gradients in x, W and b through main-graph
/// autodiff, with the calls inlined or reusing code.
std::vector<Value> loss_and_gradients(const Value& x, const Value& w, const Value& b, int calls, bool reuse_code) {
  ir::Graph g;
  const std::vector<ir::TensorId> args = add_inputs(g, {x, w, b});
  const ir::TensorId y = chained(g, layer(g, x.shape, w.shape, b.shape), args, calls, reuse_code);
  const ir::TensorId loss = g.add_op("reduce_sum", {y}, {}).front();
  std::vector<ir::TensorId> outputs{loss};
  for (ir::TensorId grad : ir::autodiff(g, loss, args)) outputs.push_back(grad);
  return evaluate(g, outputs);
}

TEST(CallOp, ForwardAndGradientEqualTheInlinedCallsBitForBit) {
  for (int calls : {1, 4}) {
    const std::vector<Value> reused = loss_and_gradients(kX, kW, kB, calls, true);
    const std::vector<Value> inlined = loss_and_gradients(kX, kW, kB, calls, false);
    for (size_t i = 0; i < reused.size(); ++i) {
      expect_equal(reused[i], inlined[i], "output " + std::to_string(i) + " with " + std::to_string(calls) + " calls");
    }
  }
}

TEST(CallOp, GradientMatchesFiniteDifferences) {
  expect_finite_differences(
      {kX, kW, kB}, [](const std::vector<Value>& in) { return loss_and_gradients(in[0], in[1], in[2], 3, true); },
      1e-2, 2e-3);
}

TEST(CallOp, KernelsAreBoundOncePerDeviceForEveryCallSite) {
  for (bool reuse_code : {true, false}) {
    for (int calls : {1, 5}) {
      ir::Graph g;
      const std::vector<ir::TensorId> args = add_inputs(g, {kX, kW, kB});
      const ir::TensorId y = chained(g, layer(g, kX.shape, kW.shape, kB.shape), args, calls, reuse_code);
      g_bound = 0;
      evaluate(g, {y});
      EXPECT_EQ(g_bound, reuse_code ? 1 : calls) << calls << " call sites, reuse_code " << reuse_code;
    }
  }
}

TEST(CallOp, GraphBindingsBindEachGraphOncePerBase) {
  ir::Graph g;
  const std::vector<ir::TensorId> args = add_inputs(g, {kX, kW, kB});
  const ir::GraphId body = layer(g, kX.shape, kW.shape, kB.shape);
  const ir::TensorId y = g.call_site(ir::call(g, body, args, {}, true)).outputs.front();
  const ir::Op& op = g.op(g.tensor(y).producer);
  std::vector<std::byte> scratch(2 * scratch_bytes(g, op));
  GraphBindings bindings;
  KernelContext ctx{.graph = g, .op = op, .scratch = scratch.data()};
  ctx.graph_bindings = &bindings;
  g_bound = 0;
  const auto first = bindings.bind(ctx, body, false, scratch.data());
  EXPECT_EQ(bindings.bind(ctx, body, false, scratch.data()), first);
  EXPECT_NE(bindings.bind(ctx, body, true, scratch.data()), first);  // every buffer kept: another plan
  EXPECT_EQ(bindings.size(), 2u);
  EXPECT_EQ(g_bound, 2);
}

TEST(CallOp, ScratchIsTheGraphsPlanWhateverTheCallSites) {
  ir::Graph g;
  const std::vector<ir::TensorId> args = add_inputs(g, {kX, kW, kB});
  const ir::GraphId body = layer(g, kX.shape, kW.shape, kB.shape);
  const ir::TensorId y = g.call_site(ir::call(g, body, args, {}, true)).outputs.front();
  const size_t plan = plan_body(g, g.subgraph(body), false).bytes;
  EXPECT_EQ(scratch_bytes(g, g.op(g.tensor(y).producer)), plan);
  EXPECT_GT(plan, 0u);
}

TEST(CallOp, RefusesModifiedInputsArgumentsOfAnotherTypeAndRecursion) {
  ir::Graph g;
  const std::vector<ir::TensorId> args = add_inputs(g, {kX, kW, kB});
  const ir::GraphId body = layer(g, kX.shape, kW.shape, kB.shape);
  try {
    ir::call(g, body, args, {false, true, false}, true);
    ADD_FAILURE() << "a modified input of a call that reuses code was accepted";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("call of graph 'layer': input 1 'layer/W' cannot be modified"));
  }
  const int32_t site = ir::call(g, body, args, {}, true);
  try {
    g.set_call_input_modified(site, 2);
    ADD_FAILURE() << "marking an input of a call that reuses code modified was accepted";
  } catch (const ir::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("input 2 cannot be marked modified: the call reuses the graph's code"));
  }
  try {
    g.add_op("call", {args[1], args[1], args[2]}, make_attrs({{"graph", int64_t{body}}}));
    ADD_FAILURE() << "an argument of another shape was accepted";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::ShapeMismatch);
    EXPECT_THAT(e.what(), HasSubstr("argument 0 for input 'layer/x' of graph 'layer', which is float32[2,3]"));
  }
  const ir::GraphId outer = g.create_subgraph("outer");
  const ir::TensorId ox = g.add_graph_input(outer, "x", ir::DType::Float32, kX.shape);
  const ir::TensorId ow = g.add_graph_input(outer, "W", ir::DType::Float32, kW.shape);
  const ir::TensorId ob = g.add_graph_input(outer, "b", ir::DType::Float32, kB.shape);
  g.begin_graph(outer);
  g.add_graph_output(outer, g.call_site(ir::call(g, body, {ox, ow, ob}, {}, true)).outputs.front());
  g.end_graph();
  g.begin_graph(body);
  try {
    g.add_op("call", g.subgraph(body).inputs, make_attrs({{"graph", int64_t{outer}}}));
    ADD_FAILURE() << "a graph calling itself through another was accepted";
  } catch (const ir::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("graph 'layer' cannot call graph 'outer': it would run itself"));
  }
  g.end_graph();
}

}  // namespace
}  // namespace plexus::ops::test
