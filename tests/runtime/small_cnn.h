// A small CNN in the seeds' two block orders, trained for a few SGD steps by a session:
// the fusion tests (relu epilogues, conv -> relu -> max-pool groups) compare its weights with
// the fusions on and blocked.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "core/compile/passes.h"
#include "core/compile/program.h"
#include "core/ir/autodiff.h"
#include "core/session/session.h"
#include "tests/runtime/data_parallel_mlp.h"
#include "tests/runtime/test_graphs.h"

namespace plexus::runtime::testing {

/// What the CNN looks like: x [batch, 1, side, side] -> conv2d 3x3 (`filters`, `stride`,
/// `padding`, a bias when `bias`) -> relu -> max_pool2d (seed 002's order) or max_pool2d ->
/// relu (seed 003's, `pool_first`), windows `pool` x `pool` at stride `pool_stride` (0:
/// the kernel) with `pool_padding` -> flatten -> matmul to 3 classes ->
/// softmax_cross_entropy, SGD. `block` streams the relu's input to the host too, so that
/// it must be stored and no fusion takes it; `relu_after` adds a second relu after the block.
struct CnnRecipe {
  bool pool_first = false, block = false, bias = true, relu_after = false;
  int64_t batch = 4, side = 10, filters = 4, stride = 1, padding = 0;
  int64_t pool = 2, pool_stride = 0, pool_padding = 0;
};

constexpr int64_t kCnnSteps = 5, kCnnClasses = 3;

struct Cnn {
  ir::Graph g;
  ir::StreamId x, labels, relu_input = -1;
  std::vector<ir::TensorId> params;
};

inline ir::TensorId add(ir::Graph& g, const char* type, std::vector<ir::TensorId> in, ir::Attributes attrs = {}) {
  return g.add_op(type, std::move(in), std::move(attrs)).front();
}

/// The conv and pool blocks of `r` on x; returns the block's output [batch, F, PH, PW].
inline ir::TensorId conv_block(Cnn& m, const CnnRecipe& r, ir::TensorId x, ir::TensorId w, ir::TensorId b) {
  ir::Graph& g = m.g;
  ir::Attributes conv;
  conv.set("stride", std::vector<int64_t>{r.stride});
  conv.set("padding", std::vector<int64_t>{r.padding});
  ir::Attributes pool;
  pool.set("kernel", std::vector<int64_t>{r.pool});
  pool.set("stride", r.pool_stride ? std::vector<int64_t>{r.pool_stride} : std::vector<int64_t>{});
  pool.set("padding", std::vector<int64_t>{r.pool_padding});
  const ir::TensorId y = add(g, "conv2d", b >= 0 ? std::vector{x, w, b} : std::vector{x, w}, conv);
  const ir::TensorId relu_in = r.pool_first ? add(g, "max_pool2d", {y}, pool) : y;
  const ir::TensorId relu = add(g, "relu", {relu_in});
  if (r.block) m.relu_input = g.add_d2h_stream("relu_input", relu_in);
  const ir::TensorId out = r.pool_first ? relu : add(g, "max_pool2d", {relu}, pool);
  return r.relu_after ? add(g, "relu", {out}) : out;
}

/// The CNN of `r`, its weights drawn from a fixed seed, with its gradients and SGD updates.
inline Cnn build_cnn(const CnnRecipe& r) {
  Cnn m;
  ir::Graph& g = m.g;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 0.4f);
  auto param = [&](const char* name, ir::Shape shape) {
    std::vector<float> v(static_cast<size_t>(ir::numel(shape)));
    for (float& e : v) e = normal(rng);
    m.params.push_back(g.add_variable(name, ir::DType::Float32, std::move(shape), f32(v)));
    return m.params.back();
  };
  const ir::TensorId w = param("w", {r.filters, 1, 3, 3});
  const ir::TensorId b = r.bias ? param("b", {r.filters}) : ir::kNoTensor;
  m.x = g.add_h2d_stream("x", ir::DType::Float32, {r.batch, 1, r.side, r.side});
  m.labels = g.add_h2d_stream("labels", ir::DType::Int32, {r.batch});
  const ir::TensorId out = conv_block(m, r, g.stream(m.x).tensor, w, b);
  const int64_t features = ir::numel(g.tensor(out).shape) / r.batch;
  const ir::TensorId fc = param("fc", {features, kCnnClasses});
  ir::Attributes flat;
  flat.set("shape", std::vector<int64_t>{r.batch, features});
  const ir::TensorId logits = add(g, "matmul", {add(g, "reshape", {out}, flat), fc});
  const ir::TensorId loss = add(g, "softmax_cross_entropy", {logits, g.stream(m.labels).tensor});
  const std::vector<ir::TensorId> grads = ir::autodiff(g, loss, m.params);
  ir::Attributes sgd;
  sgd.set("b", -0.05);
  for (size_t i = 0; i < grads.size(); ++i) g.add_op("scaled_add_", {m.params[i], grads[i]}, sgd);
  return m;
}

/// The fusions the session's program runs (the rewritten graph's `<op>_relu` ops and its
/// conv2d_relu_max_pool2d[_grad_weight] ops), and every parameter before and after
/// kCnnSteps steps.
struct TrainedCnn {
  size_t relu_fusions = 0, conv_pool_ops = 0;
  std::vector<float> initial, params;
};

/// Trains the CNN of `r` for kCnnSteps steps of random data (fixed seed) in one run of a
/// session with options `o` (its device_iterations set to kCnnSteps).
inline TrainedCnn train_cnn(const CnnRecipe& r, session::SessionOptions o = {}) {
  Cnn m = build_cnn(r);
  TrainedCnn t;
  ir::Graph rewritten = m.g;
  compile::compile(rewritten, compile::place(rewritten, {}), {});
  for (const ir::Op& op : rewritten.ops()) {
    t.relu_fusions += op.schema->name.ends_with("_relu");
    t.conv_pool_ops += op.schema->name.starts_with("conv2d_relu_max_pool2d");
  }
  o.device_iterations = kCnnSteps;
  session::Session s(m.g, o);
  t.initial = read_float_variables(s, m.params);
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(kCnnSteps * r.batch * r.side * r.side));
  for (float& v : x) v = u(rng);
  std::vector<int32_t> labels(static_cast<size_t>(kCnnSteps * r.batch));
  for (int32_t& l : labels) l = static_cast<int32_t>(rng() % kCnnClasses);
  const HostArray in[2] = {{m.x, x.data(), ir::DType::Float32, s.host_shape(m.x)},
                           {m.labels, labels.data(), ir::DType::Int32, s.host_shape(m.labels)}};
  std::vector<float> relu_input;
  std::vector<HostArray> out;
  if (r.block) {
    relu_input.resize(static_cast<size_t>(ir::numel(s.host_shape(m.relu_input))));
    out.push_back({m.relu_input, relu_input.data(), ir::DType::Float32, s.host_shape(m.relu_input)});
  }
  s.run(in, out);
  t.params = read_float_variables(s, m.params);
  return t;
}

}  // namespace plexus::runtime::testing
