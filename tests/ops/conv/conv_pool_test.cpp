// The fused conv -> relu -> max-pool ops (core/ops/conv/conv_pool.cpp), each against the ops
// it stands for, bit for bit: conv2d_relu_max_pool2d in both relu places, with and without a
// bias, 2x2 and 3x3 windows, the direct and the im2col conv paths; its gradient op against
// max_pool2d_grad, conv2d_grad_weight and reduce_sum; and the inputs and attributes they refuse.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

/// One case: the conv's input, weight, bias and attributes, the pool window, the relu's place.
struct Case {
  ir::Shape x;
  int64_t filters = 4, kernel = 3, stride = 1, padding = 0, pool = 2;
  bool relu_first = true, bias = true;

  std::string describe() const {
    return std::string(relu_first ? "relu first" : "pool first") + (bias ? ", bias" : ", no bias") + ", pool " +
           std::to_string(pool) + ", conv stride " + std::to_string(stride) + ", padding " + std::to_string(padding);
  }
  ir::Attributes conv_attrs() const { return make_attrs({{"stride", Ints{stride}}, {"padding", Ints{padding}}}); }
  ir::Attributes pool_attrs() const { return make_attrs({{"kernel", Ints{pool}}}); }
  ir::Attributes fused_attrs() const {
    return make_attrs({{"stride", Ints{stride}}, {"padding", Ints{padding}}, {"pool_kernel", Ints{pool}},
                       {"relu_first", int64_t{relu_first}}});
  }
  /// x, w[, b], random with fixed seeds.
  std::vector<Value> inputs() const {
    std::vector<Value> in{random_f32(x, 11), random_f32({filters, x[1], kernel, kernel}, 12)};
    if (bias) in.push_back(random_f32({filters}, 13));
    return in;
  }
};

/// What the pool reads: relu(conv) with the relu first, else conv.
Value pool_input(const Case& c, const std::vector<Value>& in) {
  const Value conv = run_op1("conv2d", in, c.conv_attrs());
  return c.relu_first ? run_op1("relu", {conv}) : conv;
}

std::vector<Case> cases() {
  std::vector<Case> all;
  for (const bool relu_first : {true, false}) {
    for (const bool bias : {true, false}) {
      all.push_back({.x = {3, 2, 10, 10}, .relu_first = relu_first, .bias = bias});
      all.push_back({.x = {2, 2, 11, 11}, .pool = 3, .relu_first = relu_first, .bias = bias});
      all.push_back({.x = {3, 2, 17, 17}, .stride = 2, .padding = 1, .relu_first = relu_first, .bias = bias});
    }
  }
  return all;
}

TEST(Conv2dReluMaxPool2d, IsConvReluAndPoolBitForBit) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.describe());
    const std::vector<Value> in = c.inputs();
    const Value pooled = run_op1("max_pool2d", {pool_input(c, in)}, c.pool_attrs());
    const Value expected = c.relu_first ? pooled : run_op1("relu", {pooled});
    expect_equal(run_op1("conv2d_relu_max_pool2d", in, c.fused_attrs()), expected, "conv2d_relu_max_pool2d");
  }
}

TEST(Conv2dReluMaxPool2dGradWeight, IsThePoolGradientThenTheWeightAndBiasGradientsBitForBit) {
  for (const Case& c : cases()) {
    for (const int64_t relu_folded : {0, 1}) {
      SCOPED_TRACE(c.describe() + ", relu_folded " + std::to_string(relu_folded));
      std::vector<Value> in = c.inputs();
      const Value x = pool_input(c, in);
      const Value dy = random_f32(run_op1("max_pool2d", {x}, c.pool_attrs()).shape, 14);
      ir::Attributes pool_grad = c.pool_attrs();
      pool_grad.set("relu_folded", relu_folded);
      const Value d = run_op1("max_pool2d_grad", {x, dy}, pool_grad);
      const Value& w = in[1];
      ir::Attributes weight = c.conv_attrs();
      weight.set("weight_shape", w.shape);
      in.push_back(dy);
      ir::Attributes attrs = c.fused_attrs();
      attrs.set("relu_folded", relu_folded);
      const std::vector<Value> fused = run_op("conv2d_relu_max_pool2d_grad_weight", in, attrs);
      ASSERT_EQ(fused.size(), c.bias ? 2u : 1u);
      expect_equal(fused[0], run_op1("conv2d_grad_weight", {in[0], d}, weight), "dw");
      if (c.bias) {
        const Value db = run_op1("reduce_sum", {d}, make_attrs({{"axes", Ints{0, 2, 3}}}));
        expect_equal(fused[1], db, "db");
      }
    }
  }
}

TEST(Conv2dReluMaxPool2d, RefusesWindowsThatDoNotTileAndBadAttributes) {
  const Case c{.x = {2, 2, 10, 10}};
  const std::vector<Value> in = c.inputs();
  ir::Attributes overlapping = c.fused_attrs();
  overlapping.set("pool_kernel", Ints{3});
  overlapping.set("pool_stride", Ints{2});
  const OpError e = expect_build_error("conv2d_relu_max_pool2d", in, overlapping, ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("must tile the plane"));
  ir::Attributes relu = c.fused_attrs();
  relu.set("relu_first", int64_t{2});
  EXPECT_THAT(expect_build_error("conv2d_relu_max_pool2d", in, relu, ir::ErrorCode::InvalidArgument).message,
              HasSubstr("relu_first is 2"));
  const std::vector<Value> bad_bias{in[0], in[1], random_f32({3}, 1)};
  expect_build_error("conv2d_relu_max_pool2d", bad_bias, c.fused_attrs(), ir::ErrorCode::ShapeMismatch);
}

TEST(Conv2dReluMaxPool2dGradWeight, RefusesADyOfAnotherShapeAndABadReluFolded) {
  const Case c{.x = {2, 2, 10, 10}};
  std::vector<Value> in = c.inputs();
  in.push_back(random_f32({2, 4, 5, 5}, 3));  // the pooled output is [2, 4, 4, 4]
  EXPECT_THAT(expect_build_error("conv2d_relu_max_pool2d_grad_weight", in, c.fused_attrs(), ir::ErrorCode::ShapeMismatch)
                  .message,
              HasSubstr("pooled output's shape [2,4,4,4]"));
  in.back() = random_f32({2, 4, 4, 4}, 3);
  ir::Attributes attrs = c.fused_attrs();
  attrs.set("relu_folded", int64_t{-1});
  EXPECT_THAT(expect_build_error("conv2d_relu_max_pool2d_grad_weight", in, attrs, ir::ErrorCode::InvalidArgument).message,
              HasSubstr("relu_folded is -1"));
}

}  // namespace
}  // namespace plexus::ops::test
