// Layer normalisation over the last axis (core/ops/reduction/layer_norm.cpp): layer_norm(x, [weight,
// bias]; eps) as PyTorch's F.layer_norm(x, [C], weight, bias, eps), biased variance; and
// its gradient op layer_norm_grad(x, dy, [weight]; eps) -> dx [, dweight, dbias].
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

constexpr double kDefaultEps = 1e-5;

struct RowStats {
  double mean, rstd;
};

RowStats stats(const double* x, int64_t c, double eps) {
  double mean = 0.0, var = 0.0;
  for (int64_t j = 0; j < c; ++j) mean += x[j];
  mean /= static_cast<double>(c);
  for (int64_t j = 0; j < c; ++j) var += (x[j] - mean) * (x[j] - mean);
  var /= static_cast<double>(c);  // biased, as PyTorch's LayerNorm
  return {mean, 1.0 / std::sqrt(var + eps)};
}

// (x, [w, b]) -> (x - mean) / sqrt(var + eps) * w + b, per row of the last axis.
Reference layer_norm(double eps) {
  return [eps](const std::vector<Value>& in) {
    const Value& x = in[0];
    const int64_t c = x.shape.back(), rows = static_cast<int64_t>(x.data.size()) / c;
    Value y{ir::DType::Float32, x.shape, std::vector<double>(x.data.size())};
    for (int64_t r = 0; r < rows; ++r) {
      const double* xr = x.data.data() + r * c;
      const RowStats s = stats(xr, c, eps);
      for (int64_t j = 0; j < c; ++j) {
        const auto k = static_cast<size_t>(j);
        const double w = in.size() == 3 ? in[1].data[k] : 1.0, b = in.size() == 3 ? in[2].data[k] : 0.0;
        y.data[static_cast<size_t>(r * c + j)] = (xr[j] - s.mean) * s.rstd * w + b;
      }
    }
    return y;
  };
}

// layer_norm_grad's outputs in double: dx, and dweight, dbias when a weight is given. The
// formula is the standard one; the gradient checks above verify it against finite
// differences of layer_norm end to end.
std::vector<Value> layer_norm_grad(const std::vector<Value>& in, double eps) {
  const Value &x = in[0], &dy = in[1];
  const bool affine = in.size() == 3;
  const int64_t c = x.shape.back(), rows = static_cast<int64_t>(x.data.size()) / c;
  std::vector<Value> out{{ir::DType::Float32, x.shape, std::vector<double>(x.data.size())}};
  if (affine) {
    out.push_back({ir::DType::Float32, {c}, std::vector<double>(static_cast<size_t>(c))});
    out.push_back(out.back());
  }
  for (int64_t r = 0; r < rows; ++r) {
    const size_t at = static_cast<size_t>(r * c);
    const RowStats s = stats(x.data.data() + at, c, eps);
    std::vector<double> xhat(static_cast<size_t>(c)), g(static_cast<size_t>(c));
    double mean_g = 0.0, mean_g_xhat = 0.0;
    for (size_t j = 0; j < xhat.size(); ++j) {
      xhat[j] = (x.data[at + j] - s.mean) * s.rstd;
      g[j] = dy.data[at + j] * (affine ? in[2].data[j] : 1.0);
      mean_g += g[j] / static_cast<double>(c);
      mean_g_xhat += g[j] * xhat[j] / static_cast<double>(c);
      if (affine) {
        out[1].data[j] += dy.data[at + j] * xhat[j];
        out[2].data[j] += dy.data[at + j];
      }
    }
    for (size_t j = 0; j < xhat.size(); ++j) out[0].data[at + j] = s.rstd * (g[j] - mean_g - xhat[j] * mean_g_xhat);
  }
  return out;
}

ir::Attributes eps_attr(double eps) { return make_attrs({{"eps", eps}}); }

// weight around 1 and bias around 0, as a trained LayerNorm's.
std::vector<Value> affine_inputs(const ir::Shape& shape, uint32_t seed) {
  const int64_t c = shape.back();
  return {random_f32(shape, seed, -2.0, 2.0), random_f32({c}, seed + 1, 0.5, 1.5), random_f32({c}, seed + 2)};
}

TEST(LayerNorm, ForwardAndGradientWithWeightAndBias) {
  for (const ir::Shape& shape : {ir::Shape{3, 5}, ir::Shape{2, 3, 4}, ir::Shape{6}, ir::Shape{4, 2}}) {
    SCOPED_TRACE(::testing::PrintToString(shape));
    expect_gradients("layer_norm", affine_inputs(shape, 40), {}, layer_norm(kDefaultEps));
  }
}

TEST(LayerNorm, ForwardAndGradientWithoutWeightAndBias) {
  for (const ir::Shape& shape : {ir::Shape{4, 6}, ir::Shape{2, 2, 3}, ir::Shape{7}}) {
    SCOPED_TRACE(::testing::PrintToString(shape));
    expect_gradients("layer_norm", {random_f32(shape, 41, -2.0, 2.0)}, {}, layer_norm(kDefaultEps));
  }
}

TEST(LayerNorm, EpsAttributeIsUsed) {
  // Rows of variance ~ 0.01: eps = 0.1 dominates it, eps = 0 normalises them to variance 1.
  for (const double eps : {0.1, 0.0}) {
    SCOPED_TRACE(testing::Message() << "eps " << eps);
    std::vector<Value> in = affine_inputs({3, 4}, 42);
    in[0] = random_f32({3, 4}, 43, -0.2, 0.2);
    expect_gradients("layer_norm", in, eps_attr(eps), layer_norm(eps));
  }
}

TEST(LayerNorm, DefaultEpsIsPyTorchs) {
  // A row [0, 0.002] has variance 1e-6, so eps = 1e-5 shows: y = +-0.001 / sqrt(1.1e-5) =
  // +-0.30151, where eps = 0 would give +-1.
  const Value y = run_op1("layer_norm", {f32({1, 2}, {0, 0.002})});
  expect_close(y, layer_norm(1e-5)({f32({1, 2}, {0, 0.002})}), kForwardTolerance, "default eps");
  EXPECT_NEAR(y.data[1], 0.30151, 1e-5);
}

TEST(LayerNorm, ConstantRowsGiveTheBias) {
  const Value y = run_op1("layer_norm", {f32({2, 3}, {5, 5, 5, -1, -1, -1}), f32({3}, {2, 2, 2}), f32({3}, {1, 2, 3})});
  expect_equal(y, f32({2, 3}, {1, 2, 3, 1, 2, 3}), "constant rows");
}

TEST(LayerNorm, LargeOffsetIsStable) {
  // Rows of O(1) spread around +-1000 (float32 spacing 6e-5 there): the statistics must not
  // lose the spread's digits. The reference sees the same rounded inputs, so the output is
  // as accurate as for O(1) inputs; float32 sums of 8 values near 1000 would be off by ~1e-4.
  for (const double offset : {1000.0, -1000.0}) {
    SCOPED_TRACE(testing::Message() << "offset " << offset);
    std::vector<double> v = random_values(24, -1.0, 1.0, 44);
    for (double& e : v) e += offset;
    expect_forward("layer_norm", {f32({3, 8}, v)}, {}, layer_norm(kDefaultEps), Tolerance{2e-6, 2e-6});
  }
}

TEST(LayerNormGrad, OutputsMatchReference) {
  for (const bool affine : {true, false}) {
    SCOPED_TRACE(affine ? "with weight" : "without weight");
    std::vector<Value> in{random_f32({4, 5}, 45, -2.0, 2.0), random_f32({4, 5}, 46)};
    if (affine) in.push_back(random_f32({5}, 47, 0.5, 1.5));
    const std::vector<Value> got = run_op("layer_norm_grad", in, eps_attr(0.01));
    const std::vector<Value> expected = layer_norm_grad(in, 0.01);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t k = 0; k < got.size(); ++k) {
      expect_close(got[k], expected[k], kForwardTolerance, "layer_norm_grad output " + std::to_string(k));
    }
  }
}

TEST(LayerNorm, WrongDtypesAreRejected) {
  const OpError x = expect_build_error("layer_norm", {i32({2, 2}, {1, 2, 3, 4})}, {}, ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(x.message, HasSubstr("input 0 must be float32"));
  const OpError w = expect_build_error("layer_norm", {random_f32({2, 2}, 1), i32({2}, {1, 1}), random_f32({2}, 2)}, {},
                                       ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(w.message, HasSubstr("input 1 must be float32"));
  const OpError dy = expect_build_error("layer_norm_grad", {random_f32({2, 2}, 1), i32({2, 2}, {1, 1, 1, 1})}, {},
                                        ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(dy.message, HasSubstr("input 1 must be float32"));
}

TEST(LayerNorm, WeightAndBiasMustBeOfLengthC) {
  const Value x = random_f32({3, 4}, 1), ok = random_f32({4}, 2);
  struct Case {
    Value weight, bias;
    const char* rule;
  };
  for (const Case& c : {Case{random_f32({3}, 3), ok, "weight must be [C] = [4], C being the last dim of x, not [3]"},
                        Case{ok, random_f32({5}, 3), "bias must be [C] = [4], C being the last dim of x, not [5]"},
                        Case{random_f32({1, 4}, 3), ok, "weight must be [C] = [4]"},
                        Case{ok, f32({}, {1}), "bias must be [C] = [4]"}}) {
    SCOPED_TRACE(c.rule);
    const OpError e = expect_build_error("layer_norm", {x, c.weight, c.bias}, {}, ir::ErrorCode::ShapeMismatch);
    EXPECT_THAT(e.message, HasSubstr(c.rule));
  }
  const OpError g = expect_build_error("layer_norm_grad", {x, random_f32({3, 4}, 4), random_f32({3}, 5)}, {},
                                       ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(g.message, HasSubstr("weight must be [C] = [4]"));
}

TEST(LayerNorm, WeightWithoutBiasIsRejected) {
  const OpError e = expect_build_error("layer_norm", {random_f32({3, 4}, 1), random_f32({4}, 2)}, {},
                                       ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("weight and bias come together"));
}

TEST(LayerNorm, BadShapesAndEpsAreRejected) {
  const OpError scalar = expect_build_error("layer_norm", {f32({}, {1})}, {}, ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(scalar.message, HasSubstr("x must have rank >= 1"));
  const OpError dy = expect_build_error("layer_norm_grad", {random_f32({3, 4}, 1), random_f32({4, 3}, 2)}, {},
                                        ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(dy.message, HasSubstr("x and dy must have the same shape"));
  for (const double eps : {-1e-5, std::nan(""), std::numeric_limits<double>::infinity()}) {
    SCOPED_TRACE(testing::Message() << "eps " << eps);
    const OpError e = expect_build_error("layer_norm", {random_f32({3, 4}, 1)}, eps_attr(eps),
                                         ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.message, HasSubstr("must be finite and >= 0"));
  }
}

}  // namespace
}  // namespace plexus::ops::test
