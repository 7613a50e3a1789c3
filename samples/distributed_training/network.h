// Seed 002's model (IPU TensorFlow "Distributed training", complete example), as a Plexus IR:
//   Conv2D(32, 3x3, relu) -> MaxPooling2D(2x2) -> Flatten -> Dense(64, relu) -> Dense(10)
//   images [b,1,28,28] -> [b,32,26,26] -> [b,32,13,13] -> [b,5408] -> [b,64] -> [b,10]
// Weights start as Keras's defaults: kernels glorot_uniform (U(-l, l), l = sqrt(6 /
// (fan_in + fan_out))) from an mt19937_64 seeded by --seed, biases zero. The loss is the
// softmax cross entropy averaged over the replica's (local) batch, as the seed's
// reduce_sum(loss) / BATCH_SIZE; gradients are mean-reduced over every replica of every
// worker (the seed's optimizer divides by the number of workers), then Adam (TF1
// AdamOptimizer defaults: lr 0.001, betas 0.9 / 0.999, eps 1e-8; no weight decay).
#pragma once

#include <plexus/plexus.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "samples/common/mnist_mlp.h"

namespace samples {

/// One parameter: name, shape, and the fans of its glorot range (0, 0 for a zero bias).
struct DistParamSpec {
  const char* name;
  plx::Shape shape;
  int64_t fan_in, fan_out;
};

inline const std::array<DistParamSpec, 6>& dist_param_specs() {
  static const std::array<DistParamSpec, 6> specs{{{"conv.kernel", {32, 1, 3, 3}, 9, 288},
                                                   {"conv.bias", {32}, 0, 0},
                                                   {"dense1.kernel", {32 * 13 * 13, 64}, 32 * 13 * 13, 64},
                                                   {"dense1.bias", {64}, 0, 0},
                                                   {"dense2.kernel", {64, 10}, 64, 10},
                                                   {"dense2.bias", {10}, 0, 0}}};
  return specs;
}

/// Host values of the six parameters, in dist_param_specs() order.
inline std::vector<std::vector<float>> dist_initial_weights(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<float>> values;
  for (const DistParamSpec& p : dist_param_specs()) {
    std::vector<float>& v = values.emplace_back(static_cast<size_t>(plx::numel(p.shape)), 0.0f);
    if (p.fan_in == 0) continue;
    const float limit = std::sqrt(6.0f / static_cast<float>(p.fan_in + p.fan_out));
    std::uniform_real_distribution<float> uniform(-limit, limit);
    for (float& x : v) x = uniform(rng);
  }
  return values;
}

/// The parameters' tensors of an IR, in dist_param_specs() order.
inline std::vector<plx::Tensor> add_dist_variables(plx::Ir& ir, const std::vector<std::vector<float>>& values) {
  std::vector<plx::Tensor> params;
  for (size_t i = 0; i < values.size(); ++i) {
    params.push_back(ir.variable<float>(dist_param_specs()[i].name, dist_param_specs()[i].shape, values[i]));
  }
  return params;
}

/// Logits [batch, 10] of images [batch, 1, 28, 28].
inline plx::Tensor dist_forward(plx::Ir& ir, plx::Tensor images, const std::vector<plx::Tensor>& p) {
  const plx::Tensor conv = ir.relu(ir.conv2d(images, p[0], p[1]));
  const plx::Tensor hidden = ir.relu(ir.add(ir.matmul(ir.flatten(ir.max_pool2d(conv, {2, 2})), p[2]), p[3]));
  return ir.add(ir.matmul(hidden, p[4]), p[5]);
}

/// A program of the model: its IR, streams and parameters.
struct DistProgram {
  plx::Ir ir;
  plx::Stream images, labels, loss, correct;
  std::vector<plx::Tensor> params;
};

/// Images and labels in, the logits' correct count out; returns {logits, labels}.
inline std::pair<plx::Tensor, plx::Tensor> add_dist_head(DistProgram& t, int64_t batch) {
  auto [image_stream, images] = t.ir.h2d_stream("images", PLX_DTYPE_FLOAT32, {batch, 1, 28, 28});
  auto [label_stream, labels] = t.ir.h2d_stream("labels", PLX_DTYPE_INT32, {batch});
  t.images = image_stream;
  t.labels = label_stream;
  const plx::Tensor logits = dist_forward(t.ir, images, t.params);
  t.correct = t.ir.d2h_stream("correct", count_correct(t.ir, logits, labels));
  return {logits, labels};
}

/// The training step for `replicas` global replicas of `batch` samples each: loss and
/// correct count streamed out, autodiff, gradients mean-reduced over all replicas, Adam with
/// its moments and step count as variables. `host_update`: the graph leaves the reduction
/// to the session's weight update on the host (SessionOptions::weight_update_on_host),
/// which runs the Adam ops there.
inline DistProgram build_dist_train(int64_t replicas, int64_t batch, uint64_t seed, double lr, bool host_update) {
  DistProgram t{plx::Ir(replicas), {}, {}, {}, {}, {}};
  plx::Ir& ir = t.ir;
  t.params = add_dist_variables(ir, dist_initial_weights(seed));
  const auto [logits, labels] = add_dist_head(t, batch);
  const plx::Tensor loss = ir.softmax_cross_entropy(logits, labels);
  t.loss = ir.d2h_stream("loss", loss);
  std::vector<plx::Tensor> grads = ir.autodiff(loss, t.params);
  for (size_t i = 0; i < grads.size(); ++i) {
    const DistParamSpec& spec = dist_param_specs()[i];
    if (replicas > 1 && !host_update) grads[i] = ir.all_reduce_(grads[i], "mean");
    const std::vector<float> zeros(static_cast<size_t>(plx::numel(spec.shape)), 0.0f);
    const plx::Tensor m = ir.variable<float>(std::string(spec.name) + ".adam_m", spec.shape, zeros);
    const plx::Tensor v = ir.variable<float>(std::string(spec.name) + ".adam_v", spec.shape, zeros);
    const plx::Tensor step = ir.variable<float>(std::string(spec.name) + ".adam_step", {}, {0.0f});
    ir.adamw_(t.params[i], grads[i], m, v, step, lr, 0.9, 0.999, 1e-8, /*weight_decay=*/0.0);
  }
  return t;
}

/// Inference on one replica with the given weights: images and labels in, correct count out.
inline DistProgram build_dist_test(const std::vector<std::vector<float>>& weights, int64_t batch) {
  DistProgram t{plx::Ir(1), {}, {}, {}, {}, {}};
  t.params = add_dist_variables(t.ir, weights);
  add_dist_head(t, batch);
  return t;
}

}  // namespace samples
