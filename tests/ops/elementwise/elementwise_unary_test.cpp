// Unary elementwise ops (core/ops/elementwise/elementwise_unary.cpp): relu, gelu (tanh approximation,
// PyTorch's gelu(approximate='tanh')), exp, log, sqrt, tanh, neg, and the gradient ops
// relu_grad, gelu_grad, exp_grad, log_grad, sqrt_grad and tanh_grad.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <climits>
#include <limits>
#include <cmath>
#include <numbers>

#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

double relu(double x) { return x > 0 ? x : 0.0; }

// PyTorch's gelu(x, approximate='tanh'), in double.
double gelu(double x) {
  const double inner = std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + std::tanh(inner));
}

// Its derivative, written out independently of the kernel (product and chain rule).
double gelu_derivative(double x) {
  const double c = std::sqrt(2.0 / std::numbers::pi);
  const double t = std::tanh(c * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x);
}

Reference unary(double (*f)(double)) {
  return [f](const std::vector<Value>& in) { return map_unary(in[0], f); };
}

// (x, dy) -> dy * f'(x)
Reference unary_grad(double (*derivative)(double)) {
  return [derivative](const std::vector<Value>& in) {
    return broadcast_binary(in[0], in[1], ir::DType::Float32,
                            [derivative](double x, double dy) { return dy * derivative(x); });
  };
}

TEST(Relu, ForwardAndGradient) {
  // |x| >= 0.05 keeps the central differences away from the kink at 0.
  expect_gradients("relu", {random_f32({4, 7}, 1, -3.0, 3.0, 0.05)}, {}, unary(relu));
}

TEST(Relu, ValuesByHand) {
  const double inf = std::numeric_limits<double>::infinity();
  expect_equal(run_op1("relu", {f32({6}, {-2, -0.0, 0, 1e-30, 3.5, inf})}), f32({6}, {0, 0, 0, 1e-30, 3.5, inf}),
               "relu");
}

TEST(ReluGrad, ForwardMatchesReference) {
  const Value x = random_f32({3, 5}, 2, -2.0, 2.0, 0.05), dy = random_f32({3, 5}, 3);
  expect_forward("relu_grad", {x, dy}, {}, unary_grad([](double v) { return v > 0 ? 1.0 : 0.0; }));
  // At exactly 0 the gradient is 0 (as PyTorch's relu backward).
  expect_equal(run_op1("relu_grad", {f32({3}, {-1, 0, 1}), f32({3}, {5, 5, 5})}), f32({3}, {0, 0, 5}),
               "relu_grad at -1, 0, 1");
}

TEST(Gelu, ForwardAndGradient) { expect_gradients("gelu", {random_f32({5, 6}, 4, -4.0, 4.0)}, {}, unary(gelu)); }

TEST(Gelu, ForwardOverAWideRange) {
  std::vector<double> xs;
  for (double x = -12.0; x <= 12.0; x += 0.125) xs.push_back(x);
  const auto n = static_cast<int64_t>(xs.size());
  expect_forward("gelu", {f32({n}, xs)}, {}, unary(gelu));
}

TEST(Gelu, LargeMagnitudesSaturateWithoutOverflow) {
  // exp(2 * inner) overflows to inf for large x and x^3 is huge: the results must still be
  // x (right tail) and 0 (left tail), never inf or NaN.
  const Value x = f32({8}, {20, -20, 100, -100, 1e4, -1e4, 60, -60});
  const Value y = run_op1("gelu", {x});
  expect_close(y, map_unary(x, gelu), kForwardTolerance, "gelu at large |x|");
  for (double v : y.data) EXPECT_TRUE(std::isfinite(v)) << v;
  const Value dx = run_op1("gelu_grad", {x, f32({8}, {1, 1, 1, 1, 1, 1, 1, 1})});
  expect_close(dx, f32({8}, {1, 0, 1, 0, 1, 0, 1, 0}), kForwardTolerance, "gelu_grad at large |x|");
}

TEST(Gelu, MatchesPublishedFormulaAtKnownPoints) {
  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the formula PyTorch documents for
  // gelu(approximate='tanh'), at x = -3, -1, -0.5, 0, 0.5, 1, 3, rounded to 8 decimals.
  const Value y = run_op1("gelu", {f32({7}, {-3, -1, -0.5, 0, 0.5, 1, 3})});
  expect_close(y, f32({7}, {-0.00363739, -0.15880801, -0.15428599, 0, 0.34571401, 0.84119199, 2.99636261}),
               Tolerance{1e-6, 1e-5}, "gelu");
}

TEST(GeluGrad, ForwardMatchesReference) {
  const Value x = random_f32({4, 9}, 5, -5.0, 5.0), dy = random_f32({4, 9}, 6);
  expect_forward("gelu_grad", {x, dy}, {}, unary_grad(gelu_derivative));
}

TEST(GeluGrad, DerivativeReferenceAgreesWithFiniteDifferences) {
  // Checks the test's own gelu_derivative against gelu, so the reference used above is
  // itself right.
  for (double x = -6.0; x <= 6.0; x += 0.25) {
    const double h = 1e-6, numeric = (gelu(x + h) - gelu(x - h)) / (2 * h);
    EXPECT_NEAR(gelu_derivative(x), numeric, 1e-8) << "x = " << x;
  }
}

double exp_fn(double x) { return std::exp(x); }
double log_fn(double x) { return std::log(x); }
double log_derivative(double x) { return 1.0 / x; }
double sqrt_fn(double x) { return std::sqrt(x); }
double sqrt_derivative(double x) { return 0.5 / std::sqrt(x); }
double tanh_fn(double x) { return std::tanh(x); }
double tanh_derivative(double x) { return 1.0 - std::tanh(x) * std::tanh(x); }

TEST(Exp, ForwardAndGradient) { expect_gradients("exp", {random_f32({3, 7}, 21, -3.0, 3.0)}, {}, unary(exp_fn)); }

TEST(Exp, ValuesByHand) {
  const double inf = std::numeric_limits<double>::infinity();
  // exp(89) overflows float32 (max 3.4e38 = exp(88.7)).
  expect_equal(run_op1("exp", {f32({5}, {0, -0.0, -inf, inf, 89})}), f32({5}, {1, 1, 0, inf, inf}), "exp");
}

TEST(Log, ForwardAndGradient) {
  // x >= 0.2: the derivative 1/x stays <= 5, so the finite differences are accurate.
  expect_gradients("log", {random_f32({3, 5}, 26, 0.2, 5.0)}, {}, unary(log_fn));
}

TEST(Log, ValuesByHand) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  expect_equal(run_op1("log", {f32({6}, {1, 0, -0.0, inf, -1, nan})}), f32({6}, {0, -inf, -inf, inf, nan, nan}),
               "log");
  expect_equal(run_op1("log_grad", {f32({3}, {0, 0.5, -4}), f32({3}, {1, 3, 2})}), f32({3}, {inf, 6, -0.5}),
               "log_grad");
}

TEST(Sqrt, ForwardAndGradient) {
  // x >= 0.1: the derivative 1/(2 sqrt x) stays <= 1.6, so the finite differences are accurate.
  expect_gradients("sqrt", {random_f32({4, 5}, 22, 0.1, 4.0)}, {}, unary(sqrt_fn));
}

TEST(Sqrt, ValuesByHand) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  expect_equal(run_op1("sqrt", {f32({5}, {0, -0.0, 4, inf, -1})}), f32({5}, {0, -0.0, 2, inf, nan}), "sqrt");
  // At 0 the derivative is infinite (PyTorch: dy / (2 * sqrt(0)) = inf).
  expect_equal(run_op1("sqrt_grad", {f32({2}, {0, 0.25}), f32({2}, {1, 3})}), f32({2}, {inf, 3}), "sqrt_grad");
}

TEST(Tanh, ForwardAndGradient) { expect_gradients("tanh", {random_f32({5, 4}, 23, -4.0, 4.0)}, {}, unary(tanh_fn)); }

TEST(Tanh, RelativelyAccurateNearZero) {
  // tanh(x) ~ x for small x: the result must be accurate relative to x, not to 1.
  // 1 - 2/(e^2x + 1) has an absolute error of ~2e-8, a relative one of 2e-4 at x = 1e-4 (and
  // 100% below 1e-8). glibc's tanhf is within 2 ulps (2.4e-7) and the float result of the
  // double reference rounds by 0.5 ulp (6e-8): 4e-7 relative leaves a 1.3x margin on that.
  const Value x = f32({8}, {1e-4, -1e-4, 3e-3, -2e-2, 1e-7, -1e-20, 0.1, -0.5});
  expect_close(run_op1("tanh", {x}), map_unary(x, tanh_fn), Tolerance{0.0, 4e-7}, "tanh near 0");
}

TEST(Tanh, SaturatesAndKeepsSignedZero) {
  const double inf = std::numeric_limits<double>::infinity();
  expect_equal(run_op1("tanh", {f32({6}, {0, -0.0, inf, -inf, 20, -20})}), f32({6}, {0, -0.0, 1, -1, 1, -1}), "tanh");
  expect_equal(run_op1("tanh_grad", {f32({3}, {0, 20, -inf}), f32({3}, {2, 1, 1})}), f32({3}, {2, 0, 0}),
               "tanh_grad");
}

TEST(UnaryGradOps, ForwardMatchesReference) {
  const Value x = random_f32({3, 6}, 24, 0.05, 3.0), dy = random_f32({3, 6}, 25);
  expect_forward("exp_grad", {x, dy}, {}, unary_grad(exp_fn));
  expect_forward("log_grad", {x, dy}, {}, unary_grad(log_derivative));
  expect_forward("sqrt_grad", {x, dy}, {}, unary_grad(sqrt_derivative));
  expect_forward("tanh_grad", {x, dy}, {}, unary_grad(tanh_derivative));
}

TEST(Neg, ForwardAndGradient) {
  expect_gradients("neg", {random_f32({2, 3, 4}, 7)}, {}, unary([](double x) { return -x; }));
}

TEST(Neg, Int32WrapsAtMinimum) {
  expect_equal(run_op1("neg", {i32({4}, {5, -7, 0, INT32_MIN})}), i32({4}, {-5, 7, 0, INT32_MIN}), "int32 neg");
  expect_equal(run_op1("neg", {f32({2}, {0, -0.0})}), f32({2}, {-0.0, 0}), "neg of signed zeros");
}

TEST(Unary, ScalarInput) {
  expect_forward("gelu", {f32({}, {0.7})}, {}, unary(gelu));
  expect_gradients("relu", {f32({}, {0.7})}, {}, unary(relu));
}

TEST(Unary, ActivationsRejectNonFloat) {
  for (const char* op : {"relu", "gelu", "exp", "log", "sqrt", "tanh"}) {
    SCOPED_TRACE(op);
    const OpError e = op_error(op, {i32({2}, {1, 2})});
    EXPECT_EQ(e.stage, Stage::Build);
    EXPECT_EQ(e.code, ir::ErrorCode::DTypeMismatch);
    EXPECT_THAT(e.message, HasSubstr(std::string("op '") + op + "'"));
    EXPECT_THAT(e.message, HasSubstr("input 0 must be float32"));
  }
  const OpError e = op_error("neg", {typed(ir::DType::Bool, {2}, {1, 0})});
  EXPECT_EQ(e.code, ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(e.message, HasSubstr("op 'neg'"));
  EXPECT_THAT(e.message, HasSubstr("input 0 must be a number"));
}

TEST(Unary, GradOpsNeedMatchingShapes) {
  for (const char* op : {"relu_grad", "gelu_grad", "exp_grad", "log_grad", "sqrt_grad", "tanh_grad"}) {
    SCOPED_TRACE(op);
    const OpError e = op_error(op, {random_f32({2, 3}, 1), random_f32({3, 2}, 2)});
    EXPECT_EQ(e.stage, Stage::Build);
    EXPECT_EQ(e.code, ir::ErrorCode::ShapeMismatch);
    EXPECT_THAT(e.message, HasSubstr(std::string("op '") + op + "'"));
    EXPECT_THAT(e.message, HasSubstr("x and dy must have the same shape"));
  }
}

}  // namespace
}  // namespace plexus::ops::test
