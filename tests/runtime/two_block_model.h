// The two-block training model shared by the session tests (pipelines, checkpoints):
// its graph, synthetic data, and helpers to train it and read its weights.
#pragma once

#include <string>
#include <vector>

#include "core/ir/autodiff.h"
#include "core/session/session.h"
#include "tests/runtime/test_graphs.h"

namespace plexus::runtime::testing {

inline constexpr int64_t kBatch = 4;

// x [b,3] -> B1: h = relu(x w1) -> B2: logits = h w2, loss = cross-entropy(logits, labels);
// autodiff; SGD (lr 0.1) or AdamW per variable. Streams: x, labels in; loss out. With
// `skip`, B2 reads x too: logits = h w2 + x w3.
struct TwoBlockModel {
  ir::Graph g;
  ir::StreamId x, labels, loss;
  ir::TensorId w1, w2, w3 = -1;

  explicit TwoBlockModel(bool adamw = false, int64_t batch = kBatch, bool skip = false) {
    x = g.add_h2d_stream("x", ir::DType::Float32, {batch, 3});
    labels = g.add_h2d_stream("labels", ir::DType::Int32, {batch});
    std::vector<float> v1(15), v2(10);
    for (size_t i = 0; i < v1.size(); ++i) v1[i] = 0.05f * static_cast<float>(i % 7) - 0.12f;
    for (size_t i = 0; i < v2.size(); ++i) v2[i] = 0.07f * static_cast<float>(i % 5) - 0.1f;
    w1 = g.add_variable("w1", ir::DType::Float32, {3, 5}, f32(v1));
    w2 = g.add_variable("w2", ir::DType::Float32, {5, 2}, f32(v2));
    g.begin_block("B1", -1);
    const ir::TensorId h = g.add_op("relu", {g.add_op("matmul", {g.stream(x).tensor, w1}, {}).front()}, {}).front();
    g.end_block();
    g.begin_block("B2", -1);
    ir::TensorId logits = g.add_op("matmul", {h, w2}, {}).front();
    if (skip) {
      w3 = g.add_variable("w3", ir::DType::Float32, {3, 2}, f32({0.1f, -0.2f, 0.05f, 0.3f, -0.1f, 0.2f}));
      logits = g.add_op("add", {logits, g.add_op("matmul", {g.stream(x).tensor, w3}, {}).front()}, {}).front();
    }
    const ir::TensorId l = g.add_op("softmax_cross_entropy", {logits, g.stream(labels).tensor}, {}).front();
    g.end_block();
    loss = g.add_d2h_stream("loss", l);
    std::vector<ir::TensorId> wrt{w1, w2};
    if (skip) wrt.push_back(w3);
    const std::vector<ir::TensorId> grads = ir::autodiff(g, l, wrt);
    for (size_t k = 0; k < wrt.size(); ++k) {
      if (adamw) {
        const ir::Shape shape = g.tensor(wrt[k]).shape;
        const auto bytes = static_cast<size_t>(ir::numel(shape)) * 4;
        const std::string n = g.tensor(wrt[k]).name;
        const ir::TensorId m = g.add_variable(n + ".m", ir::DType::Float32, shape, std::vector<std::byte>(bytes));
        const ir::TensorId v = g.add_variable(n + ".v", ir::DType::Float32, shape, std::vector<std::byte>(bytes));
        const ir::TensorId step = g.add_variable(n + ".step", ir::DType::Float32, {}, std::vector<std::byte>(4));
        g.add_op("adamw_", {wrt[k], grads[k], m, v, step}, {});
      } else {
        ir::Attributes a;
        a.set("a", 1.0);
        a.set("b", -0.1);
        g.add_op("scaled_add_", {wrt[k], grads[k]}, a);
      }
    }
  }
};

// Host data for `rows` micro-batches of `batch` samples.
struct Data {
  std::vector<float> x;
  std::vector<int32_t> labels;
  Data(int64_t rows, int64_t batch) {
    for (int64_t i = 0; i < rows * batch; ++i) {
      for (int j = 0; j < 3; ++j) x.push_back(0.3f * static_cast<float>((i * 3 + j) % 11) - 1.2f);
      labels.push_back(static_cast<int32_t>((i * 7) % 2));
    }
  }
};

inline std::vector<float> read(const session::Session& s, ir::TensorId t) {
  std::vector<float> out(static_cast<size_t>(ir::numel(s.variable_shape(t))));
  s.read_variable(t, std::as_writable_bytes(std::span(out)));
  return out;
}

// Runs `runs` calls; returns the loss outputs of the last one.
inline std::vector<float> train(session::Session& s, const TwoBlockModel& m, int runs, int64_t batch = kBatch) {
  const int64_t rows = s.options().device_iterations * s.options().gradient_accumulation;
  std::vector<float> loss(static_cast<size_t>(ir::numel(s.host_shape(m.loss))));
  for (int r = 0; r < runs; ++r) {
    Data d(rows, batch);
    for (float& v : d.x) v += 0.01f * static_cast<float>(r);
    const std::vector<HostArray> in{{m.x, d.x.data(), ir::DType::Float32, s.host_shape(m.x)},
                                    {m.labels, d.labels.data(), ir::DType::Int32, s.host_shape(m.labels)}};
    const HostArray out{m.loss, loss.data(), ir::DType::Float32, s.host_shape(m.loss)};
    s.run(in, std::span(&out, 1));
  }
  return loss;
}

}  // namespace plexus::runtime::testing
