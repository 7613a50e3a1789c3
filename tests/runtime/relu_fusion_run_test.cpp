// Relu epilogues at run time (core/compile/relu_fusion.h; the `<op>_relu` kernels): a small
// CNN (small_cnn.h) trained with each conv block's relu run inside its producer (conv2d, or
// max_pool2d) ends with the same weights, bit for bit, as with the fusion blocked (the
// relu's input streamed to the host, so that it must be stored), in both block orders of
// the seeds; and
// max_pool2d's epilogue on each of its paths gives what the relu op gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <random>
#include <span>
#include <vector>

#include "core/compile/passes.h"
#include "core/compile/relu_fusion.h"
#include "core/compile/program.h"
#include "core/ir/autodiff.h"
#include "core/session/session.h"
#include "tests/runtime/small_cnn.h"

namespace plexus::runtime {
namespace {

using testing::f32;
using session::Session;

ir::TensorId op(ir::Graph& g, const char* type, std::vector<ir::TensorId> in, ir::Attributes attrs = {}) {
  return g.add_op(type, std::move(in), std::move(attrs)).front();
}

TEST(ReluFusionRun, FusedAndUnfusedTrainingGiveTheSameWeightsBitForBit) {
  // Overlapping padded windows: the conv -> relu -> max-pool groups (conv_pool_fusion.h)
  // need windows that tile the plane, so each relu runs as its producer's epilogue here.
  for (const bool pool_first : {false, true}) {
    SCOPED_TRACE(pool_first ? "max_pool2d -> relu (seed 003)" : "conv2d -> relu -> max_pool2d (seed 002)");
    testing::CnnRecipe r{.pool_first = pool_first, .pool = 3, .pool_stride = 2, .pool_padding = 1};
    const testing::TrainedCnn fused = testing::train_cnn(r);
    r.block = true;
    const testing::TrainedCnn plain = testing::train_cnn(r);
    EXPECT_EQ(fused.relu_fusions, 1u);
    EXPECT_EQ(fused.conv_pool_ops, 0u);
    EXPECT_EQ(plain.relu_fusions, 0u);
    ASSERT_EQ(fused.params.size(), plain.params.size());
    EXPECT_NE(fused.params, fused.initial) << "training changed the weights";
    EXPECT_EQ(std::memcmp(fused.params.data(), plain.params.data(), fused.params.size() * sizeof(float)), 0);
  }
}

/// relu(producer(x)) of x [2,3,9,40] (values mostly <= 0, so that the relu zeroes many
/// outputs) for op `producer` with `attrs` (conv2d: a [4,3,3,3] kernel of 0.1s and a bias),
/// one inference run; `block` streams the producer's output too (no fusion).
std::vector<float> relu_after(const char* producer, const ir::Attributes& attrs, bool block, size_t& fusions) {
  ir::Graph g;
  const ir::StreamId xs = g.add_h2d_stream("x", ir::DType::Float32, {2, 3, 9, 40});
  std::vector<ir::TensorId> inputs{g.stream(xs).tensor};
  if (std::string(producer) == "conv2d") {
    inputs.push_back(g.add_variable("w", ir::DType::Float32, {4, 3, 3, 3}, f32(std::vector<float>(108, 0.1f))));
    inputs.push_back(g.add_variable("b", ir::DType::Float32, {4}, f32({0.1f, -0.1f, 0.2f, 0.0f})));
  }
  const ir::TensorId produced = op(g, producer, inputs, attrs);
  const ir::StreamId ys = g.add_d2h_stream("y", op(g, "relu", {produced}));
  if (block) g.add_d2h_stream("produced", produced);
  fusions = compile::plan_relu_fusions(g, compile::place(g, {}).op_stage).size();
  Session s(g, {});
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> u(-1.0f, 0.1f);
  std::vector<float> x(static_cast<size_t>(ir::numel(s.host_shape(xs))));
  for (float& v : x) v = u(rng);
  std::vector<float> y(static_cast<size_t>(ir::numel(s.host_shape(ys))));
  std::vector<float> produced_host(block ? y.size() : 0);
  const HostArray in{xs, x.data(), ir::DType::Float32, s.host_shape(xs)};
  std::vector<HostArray> out{{ys, y.data(), ir::DType::Float32, s.host_shape(ys)}};
  if (block) out.push_back({ys + 1, produced_host.data(), ir::DType::Float32, s.host_shape(ys)});
  s.run(std::span(&in, 1), out);
  return y;
}

/// relu_after() fused and blocked give the same bits, and the relu zeroes some outputs.
void expect_epilogue_equals_relu(const char* producer, const ir::Attributes& attrs) {
  size_t fused_count = 0, plain_count = 0;
  const std::vector<float> fused = relu_after(producer, attrs, false, fused_count);
  const std::vector<float> plain = relu_after(producer, attrs, true, plain_count);
  EXPECT_EQ(fused_count, 1u);
  EXPECT_EQ(plain_count, 0u);
  ASSERT_EQ(fused.size(), plain.size());
  EXPECT_GT(std::count(plain.begin(), plain.end(), 0.0f), 10) << "outputs the relu zeroes";
  EXPECT_EQ(std::memcmp(fused.data(), plain.data(), fused.size() * sizeof(float)), 0);
}

ir::Attributes window(int64_t kernel, int64_t stride, int64_t padding) {
  ir::Attributes a;
  if (kernel > 0) a.set("kernel", std::vector<int64_t>{kernel});
  a.set("stride", std::vector<int64_t>{stride});
  a.set("padding", std::vector<int64_t>{padding});
  return a;
}

TEST(ReluFusionRun, EveryMaxPoolPathAppliesTheEpilogueAsTheReluOpWould) {
  // 2x2 tiles (rows of 20 outputs: the AVX-512 rows where the CPU has them), 3x3 tiles, and
  // overlapping padded windows (the general path).
  for (const auto& [kernel, stride, padding] : {std::tuple{2, 2, 0}, std::tuple{3, 3, 0}, std::tuple{3, 2, 1}}) {
    SCOPED_TRACE("kernel " + std::to_string(kernel) + ", stride " + std::to_string(stride));
    expect_epilogue_equals_relu("max_pool2d", window(kernel, stride, padding));
  }
}

TEST(ReluFusionRun, EveryConvPathAppliesTheEpilogueAsTheReluOpWould) {
  // Stride 1 without padding: the direct kernels (AVX-512 where the CPU has it, else AVX2);
  // stride 2 with padding: im2col and a GEMM.
  for (const auto& [stride, padding] : {std::pair{1, 0}, std::pair{2, 1}}) {
    SCOPED_TRACE("stride " + std::to_string(stride) + ", padding " + std::to_string(padding));
    expect_epilogue_equals_relu("conv2d", window(0, stride, padding));
  }
}

}  // namespace
}  // namespace plexus::runtime
