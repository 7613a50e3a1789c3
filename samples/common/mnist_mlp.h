// The PopXL MNIST example model (PopXL user guide, "Application example: MNIST", the
// model seed 000 builds on): 784 -> 32 linear + bias -> gelu -> 32 -> 10 linear + bias ->
// gelu, softmax cross-entropy loss, every weight and bias drawn from normal(0, 0.02).
#pragma once

#include <plexus/plexus.hpp>

#include <cstdint>
#include <random>
#include <vector>

namespace samples {

inline constexpr int64_t kPixels = 28 * 28;
inline constexpr int64_t kHidden = 32;
inline constexpr int64_t kClasses = 10;

/// Host values of the four parameters, row-major: W0 [784,32], b0 [32], W1 [32,10], b1 [10].
struct MlpWeights {
  std::vector<float> w0, b0, w1, b1;

  /// normal(0, 0.02) draws from an mt19937_64 seeded with `seed` (np.random.normal in PopXL).
  static MlpWeights random(uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    auto draw = [&](int64_t n) {
      std::vector<float> v(static_cast<size_t>(n));
      for (float& x : v) x = normal(rng);
      return v;
    };
    MlpWeights w;
    w.w0 = draw(kPixels * kHidden);
    w.b0 = draw(kHidden);
    w.w1 = draw(kHidden * kClasses);
    w.b1 = draw(kClasses);
    return w;
  }
};

/// Tensor ids of the four parameters as the forward pass uses them.
struct MlpParams {
  plx::Tensor w0, b0, w1, b1;
};

/// Adds the four parameters as plain variables.
inline MlpParams add_mlp_variables(plx::Ir& ir, const MlpWeights& w) {
  return MlpParams{ir.variable<float>("W0", {kPixels, kHidden}, w.w0), ir.variable<float>("b0", {kHidden}, w.b0),
                   ir.variable<float>("W1", {kHidden, kClasses}, w.w1), ir.variable<float>("b1", {kClasses}, w.b1)};
}

/// Logits [batch, 10] of images [batch, 28, 28] (Net.build: reshape, two Linear + gelu).
inline plx::Tensor mlp_forward(plx::Ir& ir, plx::Tensor images, int64_t batch, const MlpParams& p) {
  plx::Tensor x = ir.reshape(images, {batch, kPixels});
  x = ir.gelu(ir.add(ir.matmul(x, p.w0), p.b0));
  return ir.gelu(ir.add(ir.matmul(x, p.w1), p.b1));
}

/// Number of rows whose argmax matches the label: int32 scalar.
inline plx::Tensor count_correct(plx::Ir& ir, plx::Tensor logits, plx::Tensor labels) {
  return ir.reduce_sum(ir.cast(ir.equal(ir.argmax(logits, -1), labels), PLX_DTYPE_INT32));
}

}  // namespace samples
