// Seed 000 17.1's data-parallel equivalence, as a helper shared by the single-process
// replication tests and the multi-process (worker) tests: a two-layer gelu MLP trained with
// SGD (or AdamW) on `replicas` replicas of `batch` samples each, gradients mean-reduced over
// all replicas (by the graph, or by the weight update on the host), on one fixed sample
// order.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/ir/autodiff.h"
#include "core/session/session.h"
#include "tests/runtime/test_graphs.h"

namespace plexus::runtime::testing {

inline constexpr int64_t kMlpIn = 12, kMlpHidden = 5, kMlpClasses = 3;

struct Mlp {
  ir::Graph graph;
  ir::StreamId x, y;
  std::vector<ir::TensorId> params;
};

/// How the MLP updates its weights.
struct MlpUpdate {
  bool adam = false;         ///< adamw_ (weight decay 0.01) with moments and step as variables; else SGD
  bool host_update = false;  ///< no all-reduce in the graph: SessionOptions::weight_update_on_host does it
  bool momentum = false;     ///< without adam: sgd_momentum_ (Nesterov, 0.9) with buffer and step as variables
  bool in_place = false;     ///< the gradients all-reduced in place (replicated_all_reduce_, the samples' all_reduce_)
};

inline Mlp build_mlp(int64_t replicas, int64_t batch, MlpUpdate update = {}) {
  Mlp m;
  ir::Graph& g = m.graph;
  g.set_replication_factor(replicas);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  auto param = [&](const std::string& name, ir::Shape shape) {
    std::vector<float> v(static_cast<size_t>(ir::numel(shape)));
    for (float& e : v) e = normal(rng);
    m.params.push_back(g.add_variable(name, ir::DType::Float32, std::move(shape), f32(v)));
    return m.params.back();
  };
  const ir::TensorId w0 = param("w0", {kMlpIn, kMlpHidden}), b0 = param("b0", {kMlpHidden});
  const ir::TensorId w1 = param("w1", {kMlpHidden, kMlpClasses}), b1 = param("b1", {kMlpClasses});
  m.x = g.add_h2d_stream("x", ir::DType::Float32, {batch, kMlpIn});
  m.y = g.add_h2d_stream("y", ir::DType::Int32, {batch});
  auto op = [&](const char* type, std::vector<ir::TensorId> in) { return g.add_op(type, std::move(in), {}).front(); };
  const ir::TensorId h = op("gelu", {op("add", {op("matmul", {g.stream(m.x).tensor, w0}), b0})});
  const ir::TensorId logits = op("add", {op("matmul", {h, w1}), b1});
  const ir::TensorId loss = op("softmax_cross_entropy", {logits, g.stream(m.y).tensor});
  const std::vector<ir::TensorId> grads = ir::autodiff(g, loss, m.params);
  for (size_t i = 0; i < m.params.size(); ++i) {
    ir::TensorId grad = grads[i];
    if (replicas > 1 && !update.host_update) {
      ir::Attributes mean;
      mean.set("op", std::string("mean"));
      grad = g.add_op(update.in_place ? "replicated_all_reduce_" : "replicated_all_reduce", {grad}, mean).front();
    }
    if (update.adam) {
      const ir::TensorInfo& p = g.tensor(m.params[i]);
      const std::vector<float> zeros(static_cast<size_t>(ir::numel(p.shape)), 0.0f);
      const ir::Shape shape = p.shape;
      const std::string name = p.name;
      const ir::TensorId mom = g.add_variable(name + ".m", ir::DType::Float32, shape, f32(zeros));
      const ir::TensorId vel = g.add_variable(name + ".v", ir::DType::Float32, shape, f32(zeros));
      const ir::TensorId step = g.add_variable(name + ".step", ir::DType::Float32, {}, f32({0.0f}));
      ir::Attributes adam;
      adam.set("lr", 0.01);
      g.add_op("adamw_", {m.params[i], grad, mom, vel, step}, adam);
      continue;
    }
    if (update.momentum) {
      const ir::TensorInfo& p = g.tensor(m.params[i]);
      const ir::Shape shape = p.shape;
      const std::string name = p.name;
      const ir::TensorId buf = g.add_variable(name + ".buf", ir::DType::Float32, shape,
                                              f32(std::vector<float>(static_cast<size_t>(ir::numel(shape)), 0.0f)));
      const ir::TensorId step = g.add_variable(name + ".step", ir::DType::Float32, {}, f32({0.0f}));
      ir::Attributes nesterov;
      nesterov.set("lr", 0.1);
      nesterov.set("nesterov", int64_t{1});
      g.add_op("sgd_momentum_", {m.params[i], grad, buf, step}, nesterov);
      continue;
    }
    ir::Attributes sgd;
    sgd.set("b", -0.1);
    g.add_op("scaled_add_", {m.params[i], grad}, sgd);
  }
  return m;
}

/// Every float32 variable of `vars` as session s holds it, one after the other.
inline std::vector<float> read_float_variables(session::Session& s, const std::vector<ir::TensorId>& vars) {
  std::vector<float> all;
  for (ir::TensorId p : vars) {
    std::vector<float> v(static_cast<size_t>(ir::numel(s.variable_shape(p))));
    s.read_variable(p, std::as_writable_bytes(std::span(v)));
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

/// Trains `steps` steps of the MLP for `replicas` x `batch` samples per step (the same
/// sample order whatever the split) with `options`, feeding only the replicas the session
/// hosts (all of them unless options has several workers), and returns every parameter as
/// this session reads it.
inline std::vector<float> train_mlp(int64_t replicas, int64_t batch, int64_t steps, session::SessionOptions options = {},
                                    MlpUpdate update = {}) {
  Mlp m = build_mlp(replicas, batch, update);
  options.device_iterations = steps;
  session::Session s(m.graph, options);
  const int64_t samples = steps * replicas * batch;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(samples * kMlpIn));
  for (float& v : x) v = u(rng);
  std::vector<int32_t> y(static_cast<size_t>(samples));
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<int32_t>(rng() % kMlpClasses);
  // Element [step, r] of the job's data goes to global replica r: keep the hosted ones.
  const HostedReplicas& hosted = s.hosted_replicas();
  const auto keep = [&](const auto& all, int64_t per_sample) {
    using T = typename std::decay_t<decltype(all)>::value_type;
    std::vector<T> mine;
    const auto row = static_cast<size_t>(batch * per_sample);
    for (int64_t step = 0; step < steps; ++step) {
      const auto first = static_cast<size_t>(step * replicas + hosted.first) * row;
      mine.insert(mine.end(), all.begin() + static_cast<ptrdiff_t>(first),
                  all.begin() + static_cast<ptrdiff_t>(first + static_cast<size_t>(hosted.count) * row));
    }
    return mine;
  };
  std::vector<float> x_mine = keep(x, kMlpIn);
  std::vector<int32_t> y_mine = keep(y, 1);
  const HostArray in[2] = {{m.x, x_mine.data(), ir::DType::Float32, s.host_shape(m.x)},
                           {m.y, y_mine.data(), ir::DType::Int32, s.host_shape(m.y)}};
  s.run(in, {});
  return read_float_variables(s, m.params);
}

/// Largest |a[i] - b[i]| (a and b of equal size).
inline float max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
  float worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

}  // namespace plexus::runtime::testing
