// The conv -> relu -> max-pool rewrite at run time (core/compile/conv_pool_fusion.h,
// core/ops/conv/conv_pool.cpp): the small CNN (small_cnn.h) trained with its conv blocks fused
// ends with the same weights, bit for bit, as with the groups blocked (the relu's input
// streamed to the host), over both block orders, with and without a bias, 2x2 and 3x3
// windows, batches whose weight gradient takes one chunk of images or several with a short
// last one, both conv paths (direct kernels, im2col + GEMM) and both instruction sets.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "tests/runtime/small_cnn.h"
#include "tests/scoped_env.h"

namespace plexus::runtime {
namespace {

using testing::CnnRecipe;
using session::SessionOptions;

std::string describe(const CnnRecipe& r) {
  return std::string(r.pool_first ? "pool first" : "relu first") + (r.bias ? ", bias" : ", no bias") + ", pool " +
         std::to_string(r.pool) + ", batch " + std::to_string(r.batch) + ", conv stride " + std::to_string(r.stride);
}

/// Trains r fused and blocked: the two fused ops in the first, none in the second, and the same bits.
void expect_grouped_equals_unfused(CnnRecipe r) {
  SCOPED_TRACE(describe(r));
  r.block = false;
  const testing::TrainedCnn grouped = testing::train_cnn(r);
  r.block = true;
  const testing::TrainedCnn plain = testing::train_cnn(r);
  EXPECT_EQ(grouped.conv_pool_ops, 2u);
  EXPECT_EQ(plain.conv_pool_ops, 0u);
  ASSERT_EQ(grouped.params.size(), plain.params.size());
  EXPECT_NE(grouped.params, grouped.initial) << "training changed the weights";
  EXPECT_EQ(std::memcmp(grouped.params.data(), plain.params.data(), grouped.params.size() * sizeof(float)), 0);
}

TEST(ConvPoolFusionRun, GroupedAndUnfusedTrainingGiveTheSameWeightsBitForBit) {
  // 8x8 conv outputs: 64 pixels, so the direct weight gradient sums chunks of 8 images;
  // batch 13 makes two, the second of 5.
  for (const bool pool_first : {false, true}) {
    for (const bool bias : {true, false}) {
      for (const int64_t pool : {2, 3}) {
        for (const int64_t batch : {4, 13}) {
          expect_grouped_equals_unfused({.pool_first = pool_first, .bias = bias, .batch = batch, .pool = pool});
        }
      }
    }
    // 32x32: rows of 16 pooled outputs (AVX-512 rows where the CPU has them), a chunk per image.
    expect_grouped_equals_unfused({.pool_first = pool_first, .batch = 3, .side = 34});
    // A relu after the block reads the group's output.
    expect_grouped_equals_unfused({.pool_first = pool_first, .relu_after = true});
  }
}

TEST(ConvPoolFusionRun, TheIm2colPathGroupsWithTheSameBitsToo) {
  // Stride 2 with padding: im2col and a GEMM per chunk of images (conv_gemm.h).
  for (const bool pool_first : {false, true}) {
    expect_grouped_equals_unfused({.pool_first = pool_first, .batch = 13, .side = 17, .stride = 2, .padding = 1});
  }
}

TEST(ConvPoolFusionRun, TheAvx2ConvAndPortablePoolKernelsGroupWithTheSameBits) {
  const test::ScopedEnv conv("PLEXUS_CONV_ISA", "avx2"), pool("PLEXUS_POOL_ISA", "baseline");
  for (const bool pool_first : {false, true}) {
    expect_grouped_equals_unfused({.pool_first = pool_first, .batch = 13, .side = 34});
  }
}

TEST(ConvPoolFusionRun, TheWeightUpdateOnTheHostGetsTheGroupsGradients) {
  // The weight and bias gradients come out of the gradient group, which has no op action
  // of its own: the device must post them to the host after the group (else the host
  // update waits for them forever).
  SessionOptions host;
  host.collectives_plugin = "local";
  host.collective_timeout_ms = 30000;
  host.weight_update_on_host = true;
  const testing::TrainedCnn on_host = testing::train_cnn({}, host);
  const testing::TrainedCnn on_device = testing::train_cnn({});
  EXPECT_EQ(on_host.conv_pool_ops, 2u);
  EXPECT_NE(on_host.params, on_host.initial);
  EXPECT_EQ(std::memcmp(on_host.params.data(), on_device.params.data(), on_host.params.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace plexus::runtime
