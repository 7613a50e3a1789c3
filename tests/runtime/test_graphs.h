// Small graphs and helpers shared by the runtime tests.
#pragma once

#include <cstring>
#include <vector>

#include "core/ir/graph.h"

namespace plexus::runtime::testing {

inline std::vector<std::byte> f32(const std::vector<float>& values) {
  std::vector<std::byte> out(values.size() * sizeof(float));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

inline std::vector<float> floats(const std::vector<std::byte>& bytes) {
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

/// x (h2d "x", [2]) -> y = x * 2 (d2h "y"); acc += x in place (variable "acc", [2]); R replicas.
struct Accumulator {
  ir::Graph graph;
  ir::StreamId x_stream, y_stream;
  ir::TensorId acc;

  explicit Accumulator(int64_t replicas = 1) {
    graph.set_replication_factor(replicas);
    x_stream = graph.add_h2d_stream("x", ir::DType::Float32, {2});
    const ir::TensorId x = graph.stream(x_stream).tensor;
    acc = graph.add_variable("acc", ir::DType::Float32, {2}, f32({0.0f, 0.0f}));
    const ir::TensorId two = graph.add_constant(ir::DType::Float32, {}, f32({2.0f}));
    y_stream = graph.add_d2h_stream("y", graph.add_op("mul", {x, two}, {}).front());
    graph.add_op("scaled_add_", {acc, x}, {});
  }
};

}  // namespace plexus::runtime::testing
