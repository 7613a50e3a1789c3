// Graphs through the C API (plexus.h "Graphs"): seed 000's MNIST MLP built from Linear
// graphs called twice, differentiated with graph autodiff and updated by called SGD graphs
// on modified inputs, trains to the flat main-graph build's weights bit for bit (R=2, and
// R=2 with RTS), and so does one from Linear graphs called by calls that reuse code
// (plx_call_options.reuse_code) through plx_ir_autodiff; calls pass inputs by value unless
// marked modified; gradients through call and nested call match finite differences; bad
// graphs and calls are refused by name.
#include <plexus/plexus.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <random>

#include "tests/abi/c_api_test_util.h"

namespace {

using capi_test::HasSubstr;

constexpr int64_t kBatch = 4;
constexpr int64_t kPixels = 784;
constexpr int64_t kHidden = 32;
constexpr int64_t kClasses = 10;
constexpr double kLearningRate = 0.05;

std::vector<float> normal(size_t n, uint64_t seed, float stddev) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

/// The MLP's program: streams, the four variables as a session reads them back.
struct Mlp {
  plx::Ir ir{2};
  plx::Stream images, labels;
  std::vector<plx::Tensor> vars;  // W0, b0, W1, b1
};

/// Variables (W0 replica-sharded and W1 a remote replica-sharded variable with `rts`, as in
/// seed 000) and the full tensors the forward pass reads.
struct Weights {
  std::vector<plx::Tensor> vars, full, shards;  // shards: 0 where not sharded
  plx::RemoteBuffer w1_buffer;
};

Weights add_weights(plx::Ir& ir, bool rts) {
  const std::vector<plx::Shape> shapes{{kPixels, kHidden}, {kHidden}, {kHidden, kClasses}, {kClasses}};
  const std::vector<std::string> names{"W0", "b0", "W1", "b1"};
  Weights w;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::vector<float> data = normal(static_cast<size_t>(plx::numel(shapes[i])), 7 + i, 0.02f);
    plx::Tensor var, shard;
    if (rts && i == 0) {
      var = ir.replica_sharded_variable<float>(names[i], shapes[i], data).first;
      shard = var;
    } else if (rts && i == 2) {
      w.w1_buffer = ir.remote_buffer(PLX_DTYPE_FLOAT32, {kHidden * kClasses / 2}, 1);
      var = ir.remote_replica_sharded_variable<float>(names[i], shapes[i], data, w.w1_buffer, 0);
      shard = ir.remote_load(w.w1_buffer, 0);
    } else {
      var = ir.variable<float>(names[i], shapes[i], data);
    }
    w.vars.push_back(var);
    w.shards.push_back(shard);
    w.full.push_back(shard.id != 0 ? ir.all_gather(shard) : var);
  }
  return w;
}

/// The SGD step of one parameter on replica-mean gradients: all_reduce_ then scaled_add_,
/// or for a shard, reduce_scatter then scaled_add_ (and remote_store for W1). In the main
/// graph, or as a called graph whose first input (the parameter) is marked modified.
void update(plx::Ir& ir, const Weights& w, size_t i, plx::Tensor grad, bool graphs) {
  const bool sharded = w.shards[i].id != 0;
  plx::Tensor param = sharded ? w.shards[i] : w.vars[i];
  if (graphs) {
    const plx::Graph sgd = ir.create_graph("sgd" + std::to_string(i));
    const plx::Tensor p = ir.graph_input(sgd, "param", PLX_DTYPE_FLOAT32, ir.shape(param));
    const plx::Tensor g = ir.graph_input(sgd, "grad", PLX_DTYPE_FLOAT32, ir.shape(grad));
    {
      plx::GraphScope scope(ir, sgd);
      const plx::Tensor reduced = sharded ? ir.reduce_scatter(g, "mean") : ir.all_reduce_(g, "mean");
      ir.scaled_add_(p, reduced, 1.0, -kLearningRate);
    }
    ir.call(sgd, {param, grad}, {true, false});
  } else {
    const plx::Tensor reduced = sharded ? ir.reduce_scatter(grad, "mean") : ir.all_reduce_(grad, "mean");
    param = ir.scaled_add_(param, reduced, 1.0, -kLearningRate);
  }
  if (i == 2 && sharded) ir.remote_store(w.w1_buffer, 0, param);
}

/// Linear (PopXL user guide, "Graphs"): x @ W (+ b), as a graph with inputs x, W[, b].
plx::Graph linear_graph(plx::Ir& ir, const std::string& name, int64_t in, int64_t out, bool bias) {
  const plx::Graph g = ir.create_graph(name);
  const plx::Tensor x = ir.graph_input(g, "x", PLX_DTYPE_FLOAT32, {kBatch, in});
  const plx::Tensor w = ir.graph_input(g, "W", PLX_DTYPE_FLOAT32, {in, out});
  plx::GraphScope scope(ir, g);
  plx::Tensor y = ir.matmul(x, w);
  if (bias) y = ir.add(y, ir.graph_input(g, "b", PLX_DTYPE_FLOAT32, {out}));
  ir.graph_output(g, y);
  return g;
}

/// The forward pass and loss as one graph "net"(images, labels, W0, b0, W1, b1) -> loss,
/// calling one Linear graph per layer (nested calls).
plx::Graph net_graph(plx::Ir& ir) {
  const plx::Graph fc0 = linear_graph(ir, "fc0", kPixels, kHidden, true);
  const plx::Graph fc1 = linear_graph(ir, "fc1", kHidden, kClasses, true);
  const plx::Graph net = ir.create_graph("net");
  const plx::Tensor images = ir.graph_input(net, "images", PLX_DTYPE_FLOAT32, {kBatch, 28, 28});
  const plx::Tensor labels = ir.graph_input(net, "labels", PLX_DTYPE_INT32, {kBatch});
  std::vector<plx::Tensor> p;
  for (const auto& [name, shape] : std::vector<std::pair<std::string, plx::Shape>>{
           {"W0", {kPixels, kHidden}}, {"b0", {kHidden}}, {"W1", {kHidden, kClasses}}, {"b1", {kClasses}}}) {
    p.push_back(ir.graph_input(net, name, PLX_DTYPE_FLOAT32, shape));
  }
  plx::GraphScope scope(ir, net);
  plx::Tensor x = ir.reshape(images, {kBatch, kPixels});
  x = ir.gelu(ir.call(fc0, {x, p[0], p[1]}).outputs[0]);
  x = ir.gelu(ir.call(fc1, {x, p[2], p[3]}).outputs[0]);
  ir.graph_output(net, ir.softmax_cross_entropy(x, labels));
  return net;
}

/// How build_mlp builds the step: main-graph ops; the "net" graph calling one Linear graph
/// per layer, graph autodiff, called SGD graphs; or one Linear graph per layer called from
/// the main graph by calls that reuse code (plx_call_options.reuse_code), plx_ir_autodiff.
enum class Build { Flat, Graphs, ReusedCode };

/// Seed 000's training step, built as `build` says.
Mlp build_mlp(bool rts, Build build) {
  const bool graphs = build == Build::Graphs;
  Mlp m;
  plx::Ir& ir = m.ir;
  const Weights w = add_weights(ir, rts);
  m.vars = w.vars;
  auto [image_stream, images] = ir.h2d_stream("images", PLX_DTYPE_FLOAT32, {kBatch, 28, 28});
  auto [label_stream, labels] = ir.h2d_stream("labels", PLX_DTYPE_INT32, {kBatch});
  m.images = image_stream;
  m.labels = label_stream;
  std::vector<plx::Tensor> grads;
  if (graphs) {
    const plx::Graph net = net_graph(ir);
    const std::vector<plx::Tensor> params = ir.graph_tensors(net);
    const plx::Graph grad = ir.autodiff(net, {}, {params.begin() + 2, params.end()});
    const plx::CallInfo fwd = ir.call(net, {images, labels, w.full[0], w.full[1], w.full[2], w.full[3]});
    const plx::Tensor seed = ir.constant<float>({}, {1.0f});  // d loss / d loss, as plx_ir_autodiff seeds it
    grads = ir.call(grad, ir.grad_call_inputs(grad, fwd, {seed})).outputs;
  } else if (build == Build::ReusedCode) {
    const plx::Graph fc0 = linear_graph(ir, "fc0", kPixels, kHidden, true);
    const plx::Graph fc1 = linear_graph(ir, "fc1", kHidden, kClasses, true);
    plx::Tensor x = ir.reshape(images, {kBatch, kPixels});
    x = ir.gelu(ir.call(fc0, {x, w.full[0], w.full[1]}, {}, true).outputs[0]);
    x = ir.gelu(ir.call(fc1, {x, w.full[2], w.full[3]}, {}, true).outputs[0]);
    grads = ir.autodiff(ir.softmax_cross_entropy(x, labels), w.full);
  } else {
    plx::Tensor x = ir.reshape(images, {kBatch, kPixels});
    x = ir.gelu(ir.add(ir.matmul(x, w.full[0]), w.full[1]));
    x = ir.gelu(ir.add(ir.matmul(x, w.full[2]), w.full[3]));
    grads = ir.autodiff(ir.softmax_cross_entropy(x, labels), w.full);
  }
  plx::InSequence in_sequence(ir);
  for (size_t i = 0; i < grads.size(); ++i) update(ir, w, i, grads[i], graphs);
  return m;
}

/// The four variables' bytes after `steps` steps on the same synthetic batches.
std::vector<std::vector<float>> train(const Mlp& m, int steps) {
  plx::Session session(m.ir);
  for (int s = 0; s < steps; ++s) {
    const std::vector<float> images = normal(2 * kBatch * 28 * 28, 100 + s, 1.0f);
    std::vector<int32_t> labels(2 * kBatch);
    for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>((i * 7 + s) % kClasses);
    session.run({plx::HostArray(m.images, images.data(), {2, kBatch, 28, 28}),
                 plx::HostArray(m.labels, labels.data(), {2, kBatch})});
  }
  std::vector<std::vector<float>> out;
  for (const plx::Tensor& v : m.vars) out.push_back(session.read<float>(v));
  return out;
}

void expect_same_training(bool rts, Build build) {
  const auto flat = train(build_mlp(rts, Build::Flat), 6);
  const auto graphs = train(build_mlp(rts, build), 6);
  const auto initial = normal(kHidden, 8, 0.02f);
  ASSERT_EQ(flat.size(), graphs.size());
  EXPECT_NE(std::memcmp(flat[1].data(), initial.data(), initial.size() * sizeof(float)), 0) << "b0 did not train";
  for (size_t i = 0; i < flat.size(); ++i) {
    ASSERT_EQ(flat[i].size(), graphs[i].size());
    EXPECT_EQ(std::memcmp(flat[i].data(), graphs[i].data(), flat[i].size() * sizeof(float)), 0) << "variable " << i;
  }
}

TEST(CApiGraph, MlpFromCalledLinearGraphsTrainsLikeTheFlatBuild) { expect_same_training(false, Build::Graphs); }

TEST(CApiGraph, MlpFromCalledLinearGraphsTrainsLikeTheFlatBuildWithRts) { expect_same_training(true, Build::Graphs); }

TEST(CApiGraph, MlpFromLinearGraphsCalledReusingCodeTrainsLikeTheFlatBuild) {
  expect_same_training(false, Build::ReusedCode);
}

TEST(CApiGraph, MlpFromLinearGraphsCalledReusingCodeTrainsLikeTheFlatBuildWithRts) {
  expect_same_training(true, Build::ReusedCode);
}

/// How after_call marks the variable it passes: not at all, with plx_ir_call's flag, or
/// with plx_call_site_set_input_modified once the call is added.
enum class Marked { No, AtTheCall, AfterTheCall };

/// One scaled_add_ graph "step"(p, g): p += g, called on a variable marked as `marked` says;
/// returns the variable after one run.
std::vector<float> after_call(Marked marked) {
  plx::Ir ir;
  const plx::Tensor v = ir.variable<float>("v", {3}, {1, 2, 3});
  const plx::Graph step = ir.create_graph("step");
  const plx::Tensor p = ir.graph_input(step, "p", PLX_DTYPE_FLOAT32, {3});
  const plx::Tensor g = ir.graph_input(step, "g", PLX_DTYPE_FLOAT32, {3});
  {
    plx::GraphScope scope(ir, step);
    ir.graph_output(step, ir.scaled_add_(p, g));
  }
  EXPECT_EQ(ir.name(p), "step/p");
  const plx::Tensor ones = ir.constant<float>({3}, {10, 10, 10});
  const plx::CallInfo call = ir.call(step, {v, ones}, {marked == Marked::AtTheCall, false});
  if (marked == Marked::AfterTheCall) ir.set_input_modified(call, 0);
  const plx_tensor parent = ir.parent(call, p).id;
  if (marked == Marked::No) {
    EXPECT_NE(parent, v.id) << "an input passed by value is a copy of the argument";
  } else {
    EXPECT_EQ(parent, v.id) << "a modified input's parent is the argument itself";
  }
  const plx::Stream out = ir.d2h_stream("out", call.outputs[0]);
  plx::Session session(ir);
  std::vector<float> y(3);
  session.run({}, {plx::HostArray(out, y.data(), {3})});
  EXPECT_EQ(y, (std::vector<float>{11, 12, 13})) << "the call's output is the updated input either way";
  return session.read<float>(v);
}

TEST(CApiGraph, InputsArePassedByValueUnlessMarkedModified) {
  EXPECT_EQ(after_call(Marked::No), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(after_call(Marked::AtTheCall), (std::vector<float>{11, 12, 13}));
  EXPECT_EQ(after_call(Marked::AfterTheCall), (std::vector<float>{11, 12, 13}));
}

/// A scalar loss and the gradient of one [2, 3] input.
struct Scalar {
  float loss;
  std::vector<float> grad;
};

/// Calls graph f (a scalar output, a first input [2, 3]) on `args`, then its gradient graph
/// for the first input, and runs the session: the loss and that gradient.
Scalar loss_and_gradient(plx::Ir& ir, plx::Graph f, const std::vector<plx::Tensor>& args) {
  const plx::CallInfo fwd = ir.call(f, args);
  const plx::Graph grad = ir.autodiff(f, {}, {ir.graph_tensors(f)[0]});
  const plx::Tensor seed = ir.constant<float>({}, {1.0f});
  const plx::Tensor dx = ir.call(grad, ir.grad_call_inputs(grad, fwd, {seed})).outputs[0];
  const plx::Stream loss_out = ir.d2h_stream("loss", fwd.outputs[0]);
  const plx::Stream grad_out = ir.d2h_stream("dx", dx);
  plx::Session session(ir);
  Scalar r{0, std::vector<float>(6)};
  session.run({}, {plx::HostArray(loss_out, &r.loss, {}), plx::HostArray(grad_out, r.grad.data(), {2, 3})});
  return r;
}

/// f(x) = sum(tanh(x @ W)) through `depth` >= 2 nested calls of graphs ("g0" calls "g1" ...,
/// the innermost computes tanh(x @ W)); returns the session's loss and the gradient that
/// graph autodiff of g0 gives for x.
Scalar nested(const std::vector<float>& x0, int depth) {
  plx::Ir ir;
  const plx::Tensor x = ir.variable<float>("x", {2, 3}, x0);
  const plx::Tensor w = ir.variable<float>("W", {3, 2}, {0.5f, -1.0f, 0.25f, 0.75f, -0.5f, 1.5f});
  plx::Graph inner = ir.create_graph("g" + std::to_string(depth - 1));
  {
    const plx::Tensor gx = ir.graph_input(inner, "x", PLX_DTYPE_FLOAT32, {2, 3});
    const plx::Tensor gw = ir.graph_input(inner, "W", PLX_DTYPE_FLOAT32, {3, 2});
    plx::GraphScope scope(ir, inner);
    ir.graph_output(inner, ir.op1("tanh", {ir.matmul(gx, gw)}));
  }
  for (int d = depth - 2; d >= 0; --d) {
    const plx::Graph outer = ir.create_graph("g" + std::to_string(d));
    const plx::Tensor gx = ir.graph_input(outer, "x", PLX_DTYPE_FLOAT32, {2, 3});
    const plx::Tensor gw = ir.graph_input(outer, "W", PLX_DTYPE_FLOAT32, {3, 2});
    plx::GraphScope scope(ir, outer);
    const plx::Tensor y = ir.call(inner, {gx, gw}).outputs[0];
    ir.graph_output(outer, d == 0 ? ir.reduce_sum(y) : y);
    inner = outer;
  }
  return loss_and_gradient(ir, inner, {x, w});
}

void expect_finite_differences(int depth) {
  const std::vector<float> x{0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f};
  const Scalar at = nested(x, depth);
  const float h = 1e-2f;
  for (size_t i = 0; i < x.size(); ++i) {
    std::vector<float> up = x, down = x;
    up[i] += h;
    down[i] -= h;
    const double fd = (static_cast<double>(nested(up, depth).loss) - nested(down, depth).loss) / (2 * h);
    EXPECT_NEAR(at.grad[i], fd, 2e-3) << "x[" << i << "] at depth " << depth;
  }
}

TEST(CApiGraph, GradientThroughCallMatchesFiniteDifferences) { expect_finite_differences(2); }

TEST(CApiGraph, GradientThroughNestedCallsMatchesFiniteDifferences) { expect_finite_differences(4); }

/// f(x, W) = sum(x_3), x_{n+1} = tanh(x_n @ W), as graph "f" holding a repeat of "step";
/// the loss and the gradient for x that graph autodiff of f gives.
Scalar through_repeat(const std::vector<float>& x0) {
  plx::Ir ir;
  const plx::Tensor x = ir.variable<float>("x", {2, 3}, x0);
  const plx::Tensor w = ir.variable<float>("W", {3, 3}, {0.5f, -0.4f, 0.3f, 0.2f, 0.6f, -0.1f, -0.3f, 0.1f, 0.4f});
  const plx::Graph step = ir.create_graph("step");
  {
    const plx::Tensor sx = ir.graph_input(step, "x", PLX_DTYPE_FLOAT32, {2, 3});
    const plx::Tensor sw = ir.graph_input(step, "W", PLX_DTYPE_FLOAT32, {3, 3});
    plx::GraphScope scope(ir, step);
    ir.graph_output(step, ir.op1("tanh", {ir.matmul(sx, sw)}));
  }
  const plx::Graph f = ir.create_graph("f");
  {
    const plx::Tensor fx = ir.graph_input(f, "x", PLX_DTYPE_FLOAT32, {2, 3});
    const plx::Tensor fw = ir.graph_input(f, "W", PLX_DTYPE_FLOAT32, {3, 3});
    plx::GraphScope scope(ir, f);
    ir.graph_output(f, ir.reduce_sum(ir.repeat(step, 3, {fx, fw})[0]));
  }
  return loss_and_gradient(ir, f, {x, w});
}

TEST(CApiGraph, GraphAutodiffThroughRepeatMatchesFiniteDifferences) {
  const std::vector<float> x{0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f};
  const Scalar at = through_repeat(x);
  const float h = 1e-2f;
  for (size_t i = 0; i < x.size(); ++i) {
    std::vector<float> up = x, down = x;
    up[i] += h;
    down[i] -= h;
    const double fd = (static_cast<double>(through_repeat(up).loss) - through_repeat(down).loss) / (2 * h);
    EXPECT_NEAR(at.grad[i], fd, 2e-3) << "x[" << i << "]";
  }
}

/// Replica r's loss L_r = sum(c * tanh(all_gather(x))) through a called graph "gathered",
/// x of each replica its own ([R=2, 3] values), and the gradient graph autodiff of the
/// graph gives replica r for its x: the all-gather's gradient is the local slice (docs/
/// design.md, "Semantics"), so it is d L_r / d x_r with the other replica's x held.
struct PerReplica {
  std::vector<float> loss, grad;
};

PerReplica gathered(const std::vector<float>& x0, bool reuse_code) {
  plx::Ir ir(2);
  const plx::ReplicaGrouping each(2, 1);
  const plx::Tensor x = ir.variable<float>("x", {3}, x0, each);
  const plx::Graph g = ir.create_graph("gathered");
  {
    const plx::Tensor gx = ir.graph_input(g, "x", PLX_DTYPE_FLOAT32, {3});
    plx::GraphScope scope(ir, g);
    const plx::Tensor c = ir.constant<float>({2, 3}, {1.0f, -0.5f, 2.0f, 0.25f, 1.5f, -1.0f});
    const plx::Tensor all = ir.all_gather(gx, nullptr, "new_axis");  // [2, 3]: replica 0's x, replica 1's
    ir.graph_output(g, ir.reduce_sum(ir.mul(c, ir.op1("tanh", {all}))));
  }
  const plx::CallInfo fwd = ir.call(g, {x}, {}, reuse_code);
  plx::Tensor dx;
  if (reuse_code) {  // main-graph autodiff through the call op (its gradient runs the graph again)
    dx = ir.autodiff(fwd.outputs[0], {x})[0];
  } else {
    const plx::Graph grad = ir.autodiff(g);
    const plx::Tensor seed = ir.constant<float>({}, {1.0f});
    dx = ir.call(grad, ir.grad_call_inputs(grad, fwd, {seed})).outputs[0];
  }
  const plx::Stream loss_out = ir.d2h_stream("loss", fwd.outputs[0]);
  const plx::Stream grad_out = ir.d2h_stream("dx", dx);
  plx::Session session(ir);
  PerReplica r{std::vector<float>(2), std::vector<float>(6)};
  session.run({}, {plx::HostArray(loss_out, r.loss.data(), {2}), plx::HostArray(grad_out, r.grad.data(), {2, 3})});
  return r;
}

void expect_all_gather_finite_differences(bool reuse_code) {
  const std::vector<float> x{0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f};  // replica 0's, then replica 1's
  const PerReplica at = gathered(x, reuse_code);
  const float h = 1e-2f;
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t replica = i / 3;
    std::vector<float> up = x, down = x;
    up[i] += h;
    down[i] -= h;
    const double fd =
        (static_cast<double>(gathered(up, reuse_code).loss[replica]) - gathered(down, reuse_code).loss[replica]) /
        (2 * h);
    EXPECT_NEAR(at.grad[i], fd, 2e-3) << "replica " << replica << " x[" << i % 3 << "]";
  }
}

TEST(CApiGraph, GradientThroughACalledAllGatherMatchesFiniteDifferences) {
  expect_all_gather_finite_differences(false);
}

TEST(CApiGraph, GradientThroughAnAllGatherInACallThatReusesCodeMatchesFiniteDifferences) {
  expect_all_gather_finite_differences(true);
}

TEST(CApiGraph, GradientGraphListsItsExpectedConnections) {
  plx::Ir ir;
  const plx::Graph g = linear_graph(ir, "linear", 3, 2, false);
  const std::vector<plx::Tensor> in = ir.graph_tensors(g);
  const std::vector<plx::Tensor> out = ir.graph_tensors(g, true);
  const plx::Graph grad = ir.autodiff(g);
  const auto inputs = ir.expected_connections(grad);
  const auto outputs = ir.expected_connections(grad, true);
  // d(x @ W)/dx = dy @ W^T, d/dW = x^T @ dy: the gradient of y, then W and x (rule order).
  ASSERT_EQ(inputs.size(), 3u);
  EXPECT_EQ(inputs[0].fwd_tensor, out[0].id);
  EXPECT_EQ(inputs[0].type, PLX_CONNECTION_FWD_GRAD);
  std::vector<plx_tensor> fwd{inputs[1].fwd_tensor, inputs[2].fwd_tensor};
  EXPECT_THAT(fwd, ::testing::UnorderedElementsAre(in[0].id, in[1].id));
  EXPECT_EQ(inputs[1].type, PLX_CONNECTION_FWD);
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs[0].fwd_tensor, in[0].id);
  EXPECT_EQ(outputs[1].fwd_tensor, in[1].id);
  EXPECT_EQ(outputs[1].type, PLX_CONNECTION_FWD_GRAD);
  EXPECT_EQ(ir.graph_tensors(grad).size(), 3u);
}

/// x + c repeated `count` times by a repeat of the 1-op graph "inc"(x, c) = x + c: the
/// session's creation time (printed: the least of 5 creations, each timed from its start,
/// so that another process's burst does not count), its planned peak bytes, and the result.
struct Repeated {
  double create_ms;
  size_t planned_peak_bytes;
  std::vector<float> y;
};

Repeated repeat_inc(int64_t count, const std::vector<float>& x0, const std::vector<float>& c) {
  plx::Ir ir;
  const plx::Tensor x = ir.variable<float>("x", {4}, x0);
  const plx::Tensor step = ir.variable<float>("c", {4}, c);
  const plx::Graph inc = ir.create_graph("inc");
  {
    const plx::Tensor gx = ir.graph_input(inc, "x", PLX_DTYPE_FLOAT32, {4});
    const plx::Tensor gc = ir.graph_input(inc, "c", PLX_DTYPE_FLOAT32, {4});
    plx::GraphScope scope(ir, inc);
    ir.graph_output(inc, ir.add(gx, gc));
  }
  const plx::Stream out = ir.d2h_stream("y", ir.repeat(inc, count, {x, step})[0]);
  double create_ms = 1e300;
  for (int k = 0; k < 5; ++k) {
    const auto start = std::chrono::steady_clock::now();
    const plx::Session timed(ir);
    create_ms = std::min(create_ms,
                         std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  plx::Session session(ir);
  Repeated r{create_ms, session.memory_stats(0).planned_peak_bytes, std::vector<float>(4)};
  session.run({}, {plx::HostArray(out, r.y.data(), {4})});
  return r;
}

TEST(CApiGraph, RepeatIsNotUnrolledAndEqualsALoopOfTheOp) {
  const std::vector<float> x0{0.5f, -3.0f, 1e-3f, 100.0f}, c{0.1f, 0.7f, -0.3f, 1e-4f};
  const Repeated ten = repeat_inc(10, x0, c);
  const Repeated million = repeat_inc(1000000, x0, c);
  std::printf("repeat of a 1-op graph: 10 times: session created in %.2f ms, planned peak %zu bytes; "
              "10^6 times: %.2f ms, %zu bytes\n",
              ten.create_ms, ten.planned_peak_bytes, million.create_ms, million.planned_peak_bytes);
  EXPECT_EQ(ten.planned_peak_bytes, million.planned_peak_bytes);
  for (const auto& [count, got] : {std::pair{10, ten.y}, std::pair{1000000, million.y}}) {
    std::vector<float> loop = x0;
    for (int n = 0; n < count; ++n) {
      for (size_t i = 0; i < loop.size(); ++i) loop[i] = loop[i] + c[i];
    }
    EXPECT_EQ(std::memcmp(loop.data(), got.data(), loop.size() * sizeof(float)), 0) << count << " iterations";
  }
}

// ---- Bad input: each refused with a message naming the graph, input or tensor ----

class CApiGraphErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_PLX_OK(plx_ir_create(&ir_));
    const int64_t shape[] = {2, 3};
    ASSERT_PLX_OK(plx_ir_create_graph(ir_, "f", &f_));
    ASSERT_PLX_OK(plx_graph_add_input(ir_, f_, "x", PLX_DTYPE_FLOAT32, shape, 2, &fx_));
    ASSERT_PLX_OK(plx_ir_begin_graph(ir_, f_));
    ASSERT_PLX_OK(plx_ir_add_op(ir_, "tanh", &fx_, 1, nullptr, 0, &fy_, 1, nullptr));
    ASSERT_PLX_OK(plx_ir_end_graph(ir_));
    ASSERT_PLX_OK(plx_graph_add_output(ir_, f_, fy_));
    const std::vector<float> zeros(6, 0.0f);
    ASSERT_PLX_OK(plx_ir_add_variable(ir_, "v", PLX_DTYPE_FLOAT32, shape, 2, zeros.data(), 24, &v_));
  }
  void TearDown() override { plx_ir_destroy(ir_); }

  plx_ir* ir_ = nullptr;
  plx_graph f_ = 0;
  plx_tensor fx_ = 0, fy_ = 0, v_ = 0;
};

TEST_F(CApiGraphErrors, CallWithWrongArguments) {
  plx_tensor out = capi_test::kSentinelId;
  EXPECT_PLX_ERROR(plx_ir_call(ir_, f_, nullptr, 0, nullptr, &out, 1, nullptr, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "graph 'f'", "0 arguments for 1 inputs");
  plx_tensor other = 0;
  const int64_t shape[] = {3, 2};
  const std::vector<float> zeros(6, 0.0f);
  ASSERT_PLX_OK(plx_ir_add_variable(ir_, "w", PLX_DTYPE_FLOAT32, shape, 2, zeros.data(), 24, &other));
  EXPECT_PLX_ERROR(plx_ir_call(ir_, f_, &other, 1, nullptr, &out, 1, nullptr, nullptr), PLX_ERR_SHAPE_MISMATCH,
                   "graph 'f'", "input 0 'f/x'", "float32[2,3]", "float32[3,2]");
  const std::vector<int32_t> ints(6, 0);
  const int64_t same[] = {2, 3};
  ASSERT_PLX_OK(plx_ir_add_variable(ir_, "i", PLX_DTYPE_INT32, same, 2, ints.data(), 24, &other));
  EXPECT_PLX_ERROR(plx_ir_call(ir_, f_, &other, 1, nullptr, &out, 1, nullptr, nullptr), PLX_ERR_DTYPE_MISMATCH,
                   "graph 'f'", "input 0 'f/x'", "int32[2,3]");
  EXPECT_EQ(out, capi_test::kSentinelId);
}

TEST_F(CApiGraphErrors, ModifiedInputOfACallThatReusesCode) {
  plx_call_options options;
  plx_call_options_init(&options);
  EXPECT_EQ(options.reuse_code, 0);
  const uint8_t modified[] = {1};
  options.modified = modified;
  options.reuse_code = 1;
  plx_tensor out = capi_test::kSentinelId;
  EXPECT_PLX_ERROR(plx_ir_call(ir_, f_, &v_, 1, &options, &out, 1, nullptr, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "call of graph 'f'", "input 0 'f/x' cannot be modified", "passes every input by value");
  EXPECT_EQ(out, capi_test::kSentinelId);
  options.modified = nullptr;
  plx_call_site site = 0;
  ASSERT_PLX_OK(plx_ir_call(ir_, f_, &v_, 1, &options, &out, 1, nullptr, &site));
  EXPECT_PLX_ERROR(plx_call_site_set_input_modified(ir_, site, 0), PLX_ERR_INVALID_ARGUMENT,
                   "input 0 cannot be marked modified: the call reuses the graph's code");
  plx_tensor parent = 0;
  ASSERT_PLX_OK(plx_call_site_get_parent(ir_, site, fy_, &parent));
  EXPECT_EQ(parent, out);
  options.struct_size = offsetof(plx_call_options, reuse_code);  // an API 14 caller: inlined, reuse_code unread
  ASSERT_PLX_OK(plx_ir_call(ir_, f_, &v_, 1, &options, &out, 1, nullptr, &site));
  ASSERT_PLX_OK(plx_call_site_set_input_modified(ir_, site, 0));
}

TEST_F(CApiGraphErrors, MarkingAnInputOfACallThatDoesNotHaveIt) {
  plx_tensor out = 0;
  plx_call_site site = 0;
  ASSERT_PLX_OK(plx_ir_call(ir_, f_, &v_, 1, nullptr, &out, 1, nullptr, &site));
  EXPECT_PLX_ERROR(plx_call_site_set_input_modified(ir_, site, 1), PLX_ERR_INVALID_ARGUMENT, "graph 'f'",
                   "input 1 does not exist", "1 inputs");
  EXPECT_PLX_ERROR(plx_call_site_set_input_modified(nullptr, site, 0), PLX_ERR_INVALID_ARGUMENT, "ir");
  EXPECT_NE(plx_call_site_set_input_modified(ir_, site + 7, 0), PLX_OK);
  ASSERT_PLX_OK(plx_call_site_set_input_modified(ir_, site, 0));
  ASSERT_PLX_OK(plx_call_site_set_input_modified(ir_, site, 0));  // marking twice is harmless
}

TEST_F(CApiGraphErrors, TensorNamesAndTheirBufferProtocol) {
  size_t size = 0;
  EXPECT_PLX_ERROR(plx_ir_get_tensor_name(ir_, fx_, nullptr, 0, &size), PLX_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(size, 4u) << "\"f/x\" and its NUL";
  char name[4];
  ASSERT_PLX_OK(plx_ir_get_tensor_name(ir_, fx_, name, sizeof name, &size));
  EXPECT_STREQ(name, "f/x");
  ASSERT_PLX_OK(plx_ir_get_tensor_name(ir_, v_, name, 2, &size));
  EXPECT_STREQ(name, "v");
  EXPECT_PLX_ERROR(plx_ir_get_tensor_name(ir_, fy_, name, 2, &size), PLX_ERR_BUFFER_TOO_SMALL);
  EXPECT_PLX_ERROR(plx_ir_get_tensor_name(ir_, fx_, nullptr, 4, &size), PLX_ERR_INVALID_ARGUMENT, "buffer");
  EXPECT_PLX_ERROR(plx_ir_get_tensor_name(nullptr, fx_, name, 4, &size), PLX_ERR_INVALID_ARGUMENT, "ir");
}

TEST_F(CApiGraphErrors, GraphCallingItselfDirectlyOrThroughAnother) {
  plx_tensor out = 0;
  ASSERT_PLX_OK(plx_ir_begin_graph(ir_, f_));
  EXPECT_PLX_ERROR(plx_ir_call(ir_, f_, &fx_, 1, nullptr, &out, 1, nullptr, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "graph 'f' calls itself");
  ASSERT_PLX_OK(plx_ir_end_graph(ir_));
  // h calls f; then f calling h would make f call itself through h.
  plx_graph h = 0;
  plx_tensor hx = 0;
  const int64_t shape[] = {2, 3};
  ASSERT_PLX_OK(plx_ir_create_graph(ir_, "h", &h));
  ASSERT_PLX_OK(plx_graph_add_input(ir_, h, "x", PLX_DTYPE_FLOAT32, shape, 2, &hx));
  ASSERT_PLX_OK(plx_ir_begin_graph(ir_, h));
  ASSERT_PLX_OK(plx_ir_call(ir_, f_, &hx, 1, nullptr, &out, 1, nullptr, nullptr));
  ASSERT_PLX_OK(plx_ir_end_graph(ir_));
  ASSERT_PLX_OK(plx_ir_begin_graph(ir_, f_));
  EXPECT_PLX_ERROR(plx_ir_call(ir_, h, &fx_, 1, nullptr, &out, 0, nullptr, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "graph 'f' calls graph 'h', which calls 'f'");
  ASSERT_PLX_OK(plx_ir_end_graph(ir_));
}

TEST_F(CApiGraphErrors, TensorOfAnotherGraphAsOpInput) {
  plx_tensor out = 0;
  const plx_tensor inputs[] = {v_, fx_};
  EXPECT_PLX_ERROR(plx_ir_add_op(ir_, "add", inputs, 2, nullptr, 0, &out, 1, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "op 'add' in graph 'main': input 1", "'f/x' of graph 'f'");
  ASSERT_PLX_OK(plx_ir_begin_graph(ir_, f_));
  EXPECT_PLX_ERROR(plx_ir_add_op(ir_, "add", inputs, 2, nullptr, 0, &out, 1, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "op 'add' in graph 'f': input 0", "'v' of graph 'main'");
  ASSERT_PLX_OK(plx_ir_end_graph(ir_));
}

TEST_F(CApiGraphErrors, VariableInsideASubgraph) {
  ASSERT_PLX_OK(plx_ir_begin_graph(ir_, f_));
  plx_tensor t = capi_test::kSentinelId;
  const int64_t shape[] = {1};
  const float one = 1.0f;
  EXPECT_PLX_ERROR(plx_ir_add_variable(ir_, "inside", PLX_DTYPE_FLOAT32, shape, 1, &one, 4, &t),
                   PLX_ERR_INVALID_ARGUMENT, "variable 'inside'", "inside graph 'f'");
  EXPECT_EQ(t, capi_test::kSentinelId);
  ASSERT_PLX_OK(plx_ir_end_graph(ir_));
}

TEST_F(CApiGraphErrors, AutodiffOfSomethingTheGraphDoesNotCompute) {
  plx_autodiff_options o;
  plx_autodiff_options_init(&o);
  o.grads_provided = &v_;
  o.num_grads_provided = 1;
  plx_graph grad = capi_test::kSentinelId;
  EXPECT_PLX_ERROR(plx_graph_autodiff(ir_, f_, &o, &grad), PLX_ERR_INVALID_ARGUMENT, "graph 'f'", "'v'",
                   "not an output");
  // An input no output depends on has no gradient.
  plx_tensor unused = 0;
  const int64_t shape[] = {2};
  ASSERT_PLX_OK(plx_graph_add_input(ir_, f_, "unused", PLX_DTYPE_FLOAT32, shape, 1, &unused));
  plx_autodiff_options_init(&o);
  o.grads_required = &unused;
  o.num_grads_required = 1;
  EXPECT_PLX_ERROR(plx_graph_autodiff(ir_, f_, &o, &grad), PLX_ERR_INVALID_ARGUMENT, "graph 'f'",
                   "no provided output depends on input 'f/unused'");
  EXPECT_EQ(grad, capi_test::kSentinelId);
  plx_graph main_graph = 0;
  ASSERT_PLX_OK(plx_ir_get_main_graph(ir_, &main_graph));
  EXPECT_PLX_ERROR(plx_graph_autodiff(ir_, main_graph, nullptr, &grad), PLX_ERR_INVALID_ARGUMENT, "graph 'main'");
  // By default the gradients of the inputs that have one: x's, not unused's. The failed
  // calls added nothing, so the graph is "f_grad".
  ASSERT_PLX_OK(plx_graph_autodiff(ir_, f_, nullptr, &grad));
  plx_graph forward = 0;
  plx_expected_connection c[2];
  size_t count = 0;
  ASSERT_PLX_OK(plx_graph_get_expected_connections(ir_, grad, 1, c, 2, &count, &forward));
  EXPECT_EQ(forward, f_);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(c[0].fwd_tensor, fx_);
  plx_graph again = 0;
  ASSERT_PLX_OK(plx_ir_create_graph(ir_, "f_grad2", &again));
  EXPECT_EQ(again, grad + 1) << "f_grad is the graph after f";
}

TEST_F(CApiGraphErrors, RepeatWithBadArguments) {
  plx_tensor out = capi_test::kSentinelId;
  EXPECT_PLX_ERROR(plx_ir_repeat(ir_, f_, -2, &v_, 1, &out, 1, nullptr), PLX_ERR_INVALID_ARGUMENT, "op 'repeat'",
                   "count -2 must be >= 0");
  EXPECT_PLX_ERROR(plx_ir_repeat(ir_, f_, 3, nullptr, 0, &out, 1, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "graph 'f' has 1 inputs");
  ASSERT_PLX_OK(plx_ir_begin_graph(ir_, f_));
  EXPECT_PLX_ERROR(plx_ir_repeat(ir_, f_, 3, &fx_, 1, &out, 1, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "graph 'f' cannot repeat graph 'f'");
  ASSERT_PLX_OK(plx_ir_end_graph(ir_));
  EXPECT_EQ(out, capi_test::kSentinelId);
  size_t count = 0;
  EXPECT_PLX_ERROR(plx_ir_repeat(ir_, f_, 3, &v_, 1, nullptr, 0, &count), PLX_ERR_INVALID_ARGUMENT,
                   "1 outputs but max_outputs is 0");
  EXPECT_EQ(count, 1u);
  ASSERT_PLX_OK(plx_ir_repeat(ir_, f_, 3, &v_, 1, &out, 1, &count));
}

TEST_F(CApiGraphErrors, GraphIdsAreCheckedLikeOtherIds) {
  EXPECT_PLX_ERROR(plx_ir_begin_graph(ir_, v_), PLX_ERR_INVALID_ARGUMENT, "is a tensor id, not a graph id");
  EXPECT_PLX_ERROR(plx_ir_end_graph(ir_), PLX_ERR_INVALID_ARGUMENT, "end without a matching begin");
  plx_graph g = 0;
  EXPECT_PLX_ERROR(plx_ir_create_graph(ir_, "f", &g), PLX_ERR_INVALID_ARGUMENT, "graph 'f'", "already exists");
  EXPECT_PLX_ERROR(plx_ir_create_graph(ir_, "main", &g), PLX_ERR_INVALID_ARGUMENT, "graph 'main'");
  EXPECT_PLX_ERROR(plx_graph_get_expected_connections(ir_, f_, 0, nullptr, 0, nullptr, nullptr),
                   PLX_ERR_INVALID_ARGUMENT, "graph 'f' is not a gradient graph");
}

}  // namespace
