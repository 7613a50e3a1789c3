// Seed 003's network (PopTorch "Pipelining" tutorial, mnist_pipeline.py), as a Plexus IR
// split into the tutorial's four blocks:
//   B1  ConvLayer(1, 10, 5, 2):  conv2d 5x5 -> max_pool2d 2 -> relu     [b,1,28,28] -> [b,10,12,12]
//   B2  ConvLayer(10, 20, 5, 2): conv2d 5x5 -> max_pool2d 2 -> relu     -> [b,20,4,4]
//   B3  view(-1, 320) -> Linear(320, 256) -> relu                       -> [b,256]
//   B4  Linear(256, 10) (+ CrossEntropyLoss when training)              -> [b,10]
// Parameters start as PyTorch's defaults do for Conv2d and Linear (kaiming_uniform with
// a = sqrt(5), i.e. weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in))), drawn from an
// mt19937_64 seeded by --seed. build_cnn_train() adds the loss, autodiff and AdamW.
#pragma once

#include <plexus/plexus.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "samples/common/mnist_mlp.h"

namespace samples {

inline constexpr int64_t kClassesCnn = 10;

/// One parameter of the network: name, shape and fan-in (for its initial range).
struct CnnParamSpec {
  const char* name;
  plx::Shape shape;
  int64_t fan_in;
};

/// The eight parameters in order: conv1 weight/bias, conv2 weight/bias, fc1 [320,256] and
/// bias, fc2 [256,10] and bias (linear weights are stored [in, out] for matmul).
inline const std::array<CnnParamSpec, 8>& cnn_param_specs() {
  static const std::array<CnnParamSpec, 8> specs{{{"conv1.weight", {10, 1, 5, 5}, 25},
                                                  {"conv1.bias", {10}, 25},
                                                  {"conv2.weight", {20, 10, 5, 5}, 250},
                                                  {"conv2.bias", {20}, 250},
                                                  {"fc1.weight", {320, 256}, 320},
                                                  {"fc1.bias", {256}, 320},
                                                  {"fc2.weight", {256, 10}, 256},
                                                  {"fc2.bias", {10}, 256}}};
  return specs;
}

/// Host values of the eight parameters, in cnn_param_specs() order.
struct CnnWeights {
  std::vector<std::vector<float>> values;

  static CnnWeights random(uint64_t seed) {
    std::mt19937_64 rng(seed);
    CnnWeights w;
    for (const CnnParamSpec& p : cnn_param_specs()) {
      const float bound = 1.0f / std::sqrt(static_cast<float>(p.fan_in));
      std::uniform_real_distribution<float> uniform(-bound, bound);
      std::vector<float>& v = w.values.emplace_back(static_cast<size_t>(plx::numel(p.shape)));
      for (float& x : v) x = uniform(rng);
    }
    return w;
  }
};

/// The parameters' tensors in an IR.
struct CnnParams {
  std::vector<plx::Tensor> tensors;
};

inline CnnParams add_cnn_variables(plx::Ir& ir, const CnnWeights& w) {
  CnnParams p;
  for (size_t i = 0; i < w.values.size(); ++i) {
    const CnnParamSpec& spec = cnn_param_specs()[i];
    p.tensors.push_back(ir.variable<float>(spec.name, spec.shape, w.values[i]));
  }
  return p;
}

/// Logits [batch, 10] of images [batch, 1, 28, 28], ops in blocks B1..B4. The caller adds
/// the loss inside block B4 (plx::Block reopens it).
inline plx::Tensor cnn_forward(plx::Ir& ir, plx::Tensor images, const CnnParams& p) {
  const std::vector<plx::Tensor>& t = p.tensors;
  auto conv_layer = [&](plx::Tensor x, size_t first) {
    return ir.relu(ir.max_pool2d(ir.conv2d(x, t[first], t[first + 1]), {2, 2}));
  };
  plx::Tensor x;
  {
    plx::Block b1(ir, "B1");
    x = conv_layer(images, 0);
  }
  {
    plx::Block b2(ir, "B2");
    x = conv_layer(x, 2);
  }
  {
    plx::Block b3(ir, "B3");
    x = ir.relu(ir.add(ir.matmul(ir.flatten(x), t[4]), t[5]));
  }
  plx::Block b4(ir, "B4");
  return ir.add(ir.matmul(x, t[6]), t[7]);
}

/// A training program of the network: its IR, streams and parameters.
struct CnnTrainProgram {
  plx::Ir ir;
  plx::Stream images, labels, loss, correct;
  CnnParams params;
};

/// What build_cnn_train() needs.
struct CnnTrainConfig {
  int64_t batch_size = 40;  ///< micro-batch per replica
  int64_t replicas = 1;
  uint64_t seed = 0;        ///< initial weights (CnnWeights::random)
  double learning_rate = 0.001;
};

/// Seed 003's training step: images [batch,1,28,28] float32 and labels [batch] int32 in,
/// forward in blocks B1..B4, CrossEntropyLoss and the correct count in B4 streamed out,
/// autodiff, gradients mean-reduced over replicas, AdamW (PyTorch defaults: betas
/// 0.9/0.999, eps 1e-8, weight decay 0.01) with its state (exp_avg, exp_avg_sq, step) as
/// variables.
inline CnnTrainProgram build_cnn_train(const CnnTrainConfig& c) {
  CnnTrainProgram t{plx::Ir(c.replicas), {}, {}, {}, {}, {}};
  plx::Ir& ir = t.ir;
  t.params = add_cnn_variables(ir, CnnWeights::random(c.seed));
  auto [image_stream, images] = ir.h2d_stream("images", PLX_DTYPE_FLOAT32, {c.batch_size, 1, 28, 28});
  auto [label_stream, labels] = ir.h2d_stream("labels", PLX_DTYPE_INT32, {c.batch_size});
  t.images = image_stream;
  t.labels = label_stream;
  const plx::Tensor logits = cnn_forward(ir, images, t.params);
  plx::Tensor loss;
  {
    plx::Block b4(ir, "B4");
    loss = ir.softmax_cross_entropy(logits, labels);
    t.loss = ir.d2h_stream("loss", loss);
    t.correct = ir.d2h_stream("correct", count_correct(ir, logits, labels));
  }
  std::vector<plx::Tensor> grads = ir.autodiff(loss, t.params.tensors);
  for (size_t i = 0; i < grads.size(); ++i) {
    const plx::Tensor w = t.params.tensors[i];
    const CnnParamSpec& spec = cnn_param_specs()[i];
    if (c.replicas > 1) grads[i] = ir.all_reduce_(grads[i], "mean");
    const std::vector<float> zeros(static_cast<size_t>(plx::numel(spec.shape)), 0.0f);
    const plx::Tensor m = ir.variable<float>(std::string(spec.name) + ".exp_avg", spec.shape, zeros);
    const plx::Tensor v = ir.variable<float>(std::string(spec.name) + ".exp_avg_sq", spec.shape, zeros);
    const plx::Tensor step = ir.variable<float>(std::string(spec.name) + ".step", {}, {0.0f});
    ir.adamw_(w, grads[i], m, v, step, c.learning_rate);
  }
  return t;
}

}  // namespace samples
