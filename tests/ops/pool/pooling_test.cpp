// max_pool2d (core/ops/pool/pooling.cpp): PyTorch's MaxPool2d (floor mode, no dilation), the
// window's maximum over positions inside the image, ties to the first in row-major window
// order, NaN propagating; max_pool2d_grad routes dy to each window's argmax.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <limits>
#include <string>

#include "core/compile/placement.h"
#include "core/compile/passes.h"
#include "core/compile/program.h"
#include "core/ir/autodiff.h"
#include "core/ir/graph.h"
#include "tests/ops/op_test_util.h"
#include "tests/scoped_env.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

struct PoolCfg {
  int64_t kh, kw, sh, sw, ph, pw;
};

ir::Attributes pool_attrs(const PoolCfg& p) {
  return make_attrs({{"kernel", Ints{p.kh, p.kw}}, {"stride", Ints{p.sh, p.sw}}, {"padding", Ints{p.ph, p.pw}}});
}

// Calls body(plane, oh, ow, index of the window's argmax in the plane) for every window;
// the argmax follows PyTorch's CPU loop: the first position, then any later value that is
// greater or NaN.
template <class Body>
void for_each_window(const ir::Shape& x_shape, const std::vector<double>& x, const PoolCfg& p, Body body) {
  const int64_t h = x_shape[2], w = x_shape[3];
  const int64_t oh_n = (h + 2 * p.ph - p.kh) / p.sh + 1, ow_n = (w + 2 * p.pw - p.kw) / p.sw + 1;
  for (int64_t plane = 0; plane < x_shape[0] * x_shape[1]; ++plane) {
    for (int64_t oh = 0; oh < oh_n; ++oh) {
      for (int64_t ow = 0; ow < ow_n; ++ow) {
        int64_t best = -1;
        double best_value = -std::numeric_limits<double>::infinity();
        for (int64_t i = 0; i < p.kh; ++i) {
          for (int64_t j = 0; j < p.kw; ++j) {
            const int64_t r = oh * p.sh - p.ph + i, c = ow * p.sw - p.pw + j;
            if (r < 0 || r >= h || c < 0 || c >= w) continue;
            const double v = x[static_cast<size_t>(plane * h * w + r * w + c)];
            if (best < 0 || v > best_value || std::isnan(v)) {
              best = r * w + c;
              best_value = v;
            }
          }
        }
        body(plane, oh, ow, best);
      }
    }
  }
}

ir::Shape pool_out_shape(const ir::Shape& x, const PoolCfg& p) {
  return {x[0], x[1], (x[2] + 2 * p.ph - p.kh) / p.sh + 1, (x[3] + 2 * p.pw - p.kw) / p.sw + 1};
}

Reference pool_reference(PoolCfg p) {
  return [p](const std::vector<Value>& in) {
    const Value& x = in[0];
    const ir::Shape ys = pool_out_shape(x.shape, p);
    Value y{ir::DType::Float32, ys, std::vector<double>(static_cast<size_t>(ys[0] * ys[1] * ys[2] * ys[3]))};
    const int64_t hw = x.shape[2] * x.shape[3];
    for_each_window(x.shape, x.data, p, [&](int64_t plane, int64_t oh, int64_t ow, int64_t best) {
      y.data[static_cast<size_t>((plane * ys[2] + oh) * ys[3] + ow)] = x.data[static_cast<size_t>(plane * hw + best)];
    });
    return y;
  };
}

Reference pool_grad_reference(PoolCfg p) {
  return [p](const std::vector<Value>& in) {
    const Value &x = in[0], &dy = in[1];
    Value dx{ir::DType::Float32, x.shape, std::vector<double>(x.data.size(), 0.0)};
    const int64_t hw = x.shape[2] * x.shape[3];
    for_each_window(x.shape, x.data, p, [&](int64_t plane, int64_t oh, int64_t ow, int64_t best) {
      dx.data[static_cast<size_t>(plane * hw + best)] +=
          dy.data[static_cast<size_t>((plane * dy.shape[2] + oh) * dy.shape[3] + ow)];
    });
    return dx;
  };
}

TEST(MaxPool2d, SmallCaseIsExact) {
  // Kernel 2, stride 2 (the default): the maximum of each 2x2 block.
  const Value x = f32({1, 1, 4, 4}, {1, 5, 2, 0, -3, 4, 8, 7, 0, 0, -1, -2, 9, 0, -4, -3});
  expect_equal(run_op1("max_pool2d", {x}, make_attrs({{"kernel", Ints{2}}})), f32({1, 1, 2, 2}, {5, 8, 9, -1}),
               "2x2 blocks");
  // Odd size, floor mode: the last row and column of a 5x5 input are dropped by kernel 2.
  std::vector<double> v(25);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  expect_equal(run_op1("max_pool2d", {f32({1, 1, 5, 5}, v)}, make_attrs({{"kernel", Ints{2, 2}}})),
               f32({1, 1, 2, 2}, {6, 8, 16, 18}), "5x5, kernel 2");
}

TEST(MaxPool2d, PaddingNeverWins) {
  // All values negative: a zero from padding would be the maximum if padding were zeros.
  const Value x = random_f32({1, 2, 3, 3}, 1, -2.0, -1.0);
  const PoolCfg p{3, 3, 2, 2, 1, 1};
  const Value y = run_op1("max_pool2d", {x}, pool_attrs(p));
  expect_equal(y, pool_reference(p)({x}), "negative input, padding 1");
  for (double v : y.data) EXPECT_LT(v, -1.0 + 1e-6);
}

TEST(MaxPool2d, TiesGoToTheFirstMaximumInRowMajorOrder) {
  // Each 2x2 window holds two equal maxima; the gradient must go to the first of them.
  const Value x = f32({1, 1, 2, 4}, {1, 3, 3, 0, 3, 2, 1, 3});
  const Value dy = f32({1, 1, 1, 2}, {10, 20});
  const ir::Attributes a = make_attrs({{"kernel", Ints{2}}});
  expect_equal(run_op1("max_pool2d", {x}, a), f32({1, 1, 1, 2}, {3, 3}), "forward");
  expect_equal(run_op1("max_pool2d_grad", {x, dy}, a), f32({1, 1, 2, 4}, {0, 10, 20, 0, 0, 0, 0, 0}), "dx");
  // A constant image: every window's first position.
  const Value ones = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  expect_equal(run_op1("max_pool2d_grad", {ones, f32({1, 1, 1, 1}, {5})}, a), f32({1, 1, 2, 2}, {5, 0, 0, 0}),
               "constant window");
}

TEST(MaxPool2d, InfinityAndNaN) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  // Window 0: all -inf (the result is -inf, the gradient goes to its first position);
  // window 1: a NaN after a larger value (NaN wins, as in PyTorch).
  const Value x = f32({1, 1, 2, 4}, {-inf, -inf, 5, 1, -inf, -inf, nan, 2});
  const ir::Attributes a = make_attrs({{"kernel", Ints{2}}});
  expect_equal(run_op1("max_pool2d", {x}, a), f32({1, 1, 1, 2}, {-inf, nan}), "forward");
  expect_equal(run_op1("max_pool2d_grad", {x, f32({1, 1, 1, 2}, {1, 2})}, a),
               f32({1, 1, 2, 4}, {1, 0, 0, 0, 0, 0, 2, 0}), "dx");
}

// Kernel / stride / padding combinations: the seed's 2x2, overlapping windows (stride <
// kernel, so dx sums several dy), padding, non-square kernels and strides, odd sizes.
class MaxPool2dShapes : public ::testing::TestWithParam<PoolCfg> {};

TEST_P(MaxPool2dShapes, ForwardAndGradientMatchDoubleReference) {
  const PoolCfg p = GetParam();
  const Value x = random_f32({2, 3, 7, 6}, 7);
  expect_gradients("max_pool2d", {x}, pool_attrs(p), pool_reference(p));
  expect_forward("max_pool2d_grad", {x, random_f32(pool_out_shape(x.shape, p), 8)}, pool_attrs(p),
                 pool_grad_reference(p));
}

std::string pool_case_name(const ::testing::TestParamInfo<PoolCfg>& info) {
  const PoolCfg& p = info.param;
  return "k" + std::to_string(p.kh) + "x" + std::to_string(p.kw) + "_s" + std::to_string(p.sh) + "x" +
         std::to_string(p.sw) + "_p" + std::to_string(p.ph) + "x" + std::to_string(p.pw);
}

INSTANTIATE_TEST_SUITE_P(Windows, MaxPool2dShapes,
                         ::testing::Values(PoolCfg{2, 2, 2, 2, 0, 0}, PoolCfg{3, 3, 2, 2, 1, 1},
                                           PoolCfg{3, 3, 1, 1, 0, 0}, PoolCfg{2, 3, 1, 2, 1, 1},
                                           PoolCfg{1, 1, 2, 3, 0, 0}, PoolCfg{7, 6, 1, 1, 0, 0},
                                           PoolCfg{3, 3, 3, 3, 0, 0}),
                         pool_case_name);

// --- the tiled fast path (kernel == stride in {2, 3}, no padding) ------------------------

/// Values from a few levels, so most windows hold ties, with -inf and NaN (several NaNs in
/// some windows: the last one is the argmax) mixed in.
Value tie_heavy_f32(const ir::Shape& shape, uint32_t seed) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  Value x = random_f32(shape, seed, 0.0, 1.0);
  for (double& v : x.data) v = v < 0.06 ? nan : v < 0.12 ? -inf : std::floor(v * 4.0) - 2.0;
  return x;
}

/// dy with some -0.0 (the gradient of a winning -0.0 dy is +0.0, as in `0 += dy`).
Value dy_with_negative_zeros(const ir::Shape& shape, uint32_t seed) {
  Value dy = random_f32(shape, seed);
  for (size_t i = 0; i < dy.data.size(); i += 3) dy.data[i] = -0.0;
  return dy;
}

class MaxPool2dTiles : public ::testing::TestWithParam<std::tuple<int64_t, ir::Shape>> {};

/// The tiled paths' row kernels: the CPU's widest (AVX-512 for 2x2 where it has it, see
/// core/ops/pool/max_pool_avx512.h) and the portable one.
const char* const kPoolIsas[] = {nullptr, "baseline"};

TEST_P(MaxPool2dTiles, ForwardAndGradientEqualTheReferenceBitForBit) {
  const auto& [k, shape] = GetParam();
  const PoolCfg p{k, k, k, k, 0, 0};
  for (const char* isa : kPoolIsas) {
    const plexus::test::ScopedEnv env("PLEXUS_POOL_ISA", isa);
    for (const bool ties : {false, true}) {
      SCOPED_TRACE(std::string(isa ? isa : "widest") + (ties ? ", tie-heavy values with -inf and NaN" : ", uniform values"));
      const Value x = ties ? tie_heavy_f32(shape, 21) : random_f32(shape, 21);
      const Value dy = dy_with_negative_zeros(pool_out_shape(shape, p), 22);
      expect_equal(run_op1("max_pool2d", {x}, pool_attrs(p)), pool_reference(p)({x}), "forward");
      expect_equal(run_op1("max_pool2d_grad", {x, dy}, pool_attrs(p)), pool_grad_reference(p)({x, dy}), "dx");
    }
  }
}

std::string tile_case_name(const ::testing::TestParamInfo<std::tuple<int64_t, ir::Shape>>& info) {
  const auto& [k, s] = info.param;
  return "k" + std::to_string(k) + "_" + std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" +
         std::to_string(s[2]) + "x" + std::to_string(s[3]);
}

// The smallest planes, one plane, odd H and W (the last rows / columns no window covers get
// a zero gradient), rows wide enough for several vectors of output columns (2x2: 16 output
// columns per AVX-512 step, from rows of 8: rows of 8, 13, 16, 17 and 32 outputs).
INSTANTIATE_TEST_SUITE_P(
    Shapes, MaxPool2dTiles,
    ::testing::Values(std::tuple{int64_t{2}, ir::Shape{1, 1, 2, 2}}, std::tuple{int64_t{2}, ir::Shape{1, 1, 3, 3}},
                      std::tuple{int64_t{2}, ir::Shape{1, 1, 5, 7}}, std::tuple{int64_t{2}, ir::Shape{2, 3, 7, 6}},
                      std::tuple{int64_t{2}, ir::Shape{1, 1, 2, 9}}, std::tuple{int64_t{2}, ir::Shape{3, 2, 26, 26}},
                      std::tuple{int64_t{2}, ir::Shape{1, 2, 9, 35}}, std::tuple{int64_t{2}, ir::Shape{1, 1, 2, 32}}, std::tuple{int64_t{2}, ir::Shape{1, 1, 2, 16}},
                      std::tuple{int64_t{2}, ir::Shape{2, 1, 4, 65}}, std::tuple{int64_t{3}, ir::Shape{1, 1, 3, 3}},
                      std::tuple{int64_t{3}, ir::Shape{1, 1, 5, 4}}, std::tuple{int64_t{3}, ir::Shape{2, 3, 10, 11}},
                      std::tuple{int64_t{3}, ir::Shape{1, 2, 7, 40}}),
    tile_case_name);

TEST(MaxPool2d, TiledWindowTiesAndNaNs) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  // 2x2 windows: a tie between the two rows (the top one wins); a tie in the bottom row;
  // all -inf; two NaNs (the later one gets the gradient); NaN before a larger value.
  const Value x = f32({1, 1, 2, 10}, {4, 1, 0, 0, -inf, -inf, nan, 1, nan, 9,  //
                                      4, 2, 3, 3, -inf, -inf, 2, nan, 5, 1});
  const Value dy = f32({1, 1, 1, 5}, {1, 2, 3, 4, 5});
  const ir::Attributes a = make_attrs({{"kernel", Ints{2}}});
  expect_equal(run_op1("max_pool2d", {x}, a), f32({1, 1, 1, 5}, {4, 3, -inf, nan, nan}), "forward");
  expect_equal(run_op1("max_pool2d_grad", {x, dy}, a),
               f32({1, 1, 2, 10}, {1, 0, 0, 0, 3, 0, 0, 0, 5, 0,  //
                                   0, 0, 2, 0, 0, 0, 0, 4, 0, 0}),
               "dx");
}

TEST(MaxPool2d, StrideDefaultsToTheKernel) {
  const Value x = random_f32({1, 2, 6, 9}, 3);
  expect_forward("max_pool2d", {x}, make_attrs({{"kernel", Ints{2, 3}}}), pool_reference({2, 3, 2, 3, 0, 0}));
}

TEST(MaxPool2d, SeedLayerShapesWithGradients) {
  // The seed's MaxPool2d(2) after each conv layer, at batch 2.
  for (const ir::Shape& shape : {ir::Shape{2, 10, 24, 24}, ir::Shape{2, 20, 8, 8}}) {
    SCOPED_TRACE(ir::shape_string(shape));
    GradCheckOptions options;
    options.sample = 1000;
    expect_gradients("max_pool2d", {random_f32(shape, 9)}, make_attrs({{"kernel", Ints{2}}}),
                     pool_reference({2, 2, 2, 2, 0, 0}), options);
  }
}

// --- relu -> max_pool2d: relu's gradient folded into max_pool2d_grad ----------------------

/// x with most values <= 0 zeroed, as a relu's output: many windows are all zeros.
Value relu_output(const ir::Shape& shape, uint32_t seed) {
  Value x = random_f32(shape, seed, -1.0, 0.15);
  for (double& v : x.data) v = v > 0.0 ? v : 0.0;
  return x;
}

ir::Attributes folded(const PoolCfg& p) {
  ir::Attributes a = pool_attrs(p);
  a.set("relu_folded", int64_t{1});
  return a;
}

/// max_pool2d_grad with relu_folded: the unfolded gradient, zero where x is not > 0 (the
/// window's max, at its argmax); counts into `masked` the nonzero values that zeroed.
Value folded_grad_reference(const PoolCfg& p, const Value& x, const Value& dy, size_t* masked = nullptr) {
  Value expected = pool_grad_reference(p)({x, dy});
  for (size_t i = 0; i < expected.data.size(); ++i) {
    if (x.data[i] > 0.0) continue;
    if (masked) *masked += expected.data[i] != 0.0;
    expected.data[i] = 0.0;
  }
  return expected;
}

TEST(MaxPool2dGrad, ReluFoldedAddsNothingWhereTheWindowMaxIsNotPositive) {
  // Tiled 2x2 and 3x3 (the fast path) and an overlapping, padded window (the general one).
  for (const PoolCfg& p : {PoolCfg{2, 2, 2, 2, 0, 0}, PoolCfg{3, 3, 3, 3, 0, 0}, PoolCfg{3, 3, 2, 2, 1, 1}}) {
    SCOPED_TRACE("kernel " + std::to_string(p.kh) + ", stride " + std::to_string(p.sh));
    const ir::Shape shape{2, 3, 13, 14};
    const Value x = relu_output(shape, 31);
    const Value dy = dy_with_negative_zeros(pool_out_shape(shape, p), 32);
    size_t masked = 0;  // windows whose max is 0 but whose dy is not: the case must have many
    const Value expected = folded_grad_reference(p, x, dy, &masked);
    EXPECT_GT(masked, 10u);
    for (const char* isa : kPoolIsas) {
      const plexus::test::ScopedEnv env("PLEXUS_POOL_ISA", isa);
      SCOPED_TRACE(isa ? isa : "widest");
      const Value got = run_op1("max_pool2d_grad", {x, dy}, folded(p));
      if (p.kh == p.sh) {
        expect_equal(got, expected, "dx (tiled: one dy per element, bit for bit)");
      } else {
        expect_close(got, expected, kForwardTolerance, "dx (overlapping windows: float32 sums)");
      }
    }
  }
}

/// Where the memory plan puts tensor t of the one-stage graph g in its slot region.
size_t slot_offset(ir::Graph& g, ir::TensorId t) {
  const compile::Program p = compile::compile(g, compile::place(g, {}), {});
  return p.stages[0].slot_offset.at(p.root_of[static_cast<size_t>(t)]);
}

/// Value `v` with every element negated (exactly, NaNs included).
Value negated(Value v) {
  for (double& d : v.data) d = -d;
  return v;
}

TEST_P(MaxPool2dTiles, GradientWrittenOverItsInputEqualsTheReferenceBitForBit) {
  // x = neg(-x) is a slot tensor that max_pool2d_grad reads last, so the memory plan gives
  // dx x's buffer (ops::KernelDef::may_inplace) and the row kernels overwrite x as they go.
  const auto& [k, shape] = GetParam();
  const PoolCfg p{k, k, k, k, 0, 0};
  for (const char* isa : kPoolIsas) {
    const plexus::test::ScopedEnv env("PLEXUS_POOL_ISA", isa);
    for (const bool relu : {false, true}) {
      SCOPED_TRACE(std::string(isa ? isa : "widest") + (relu ? ", relu folded" : ""));
      const Value x = relu ? relu_output(shape, 23) : tie_heavy_f32(shape, 23);
      const Value dy = dy_with_negative_zeros(pool_out_shape(shape, p), 24);
      ir::Graph g;
      const std::vector<ir::TensorId> in = add_inputs(g, {negated(x), dy});
      const ir::TensorId x_slot = g.add_op("neg", {in[0]}, {}).front();
      ir::Attributes attrs = pool_attrs(p);
      attrs.set("relu_folded", int64_t{relu});
      const ir::TensorId dx = g.add_op("max_pool2d_grad", {x_slot, in[1]}, attrs).front();
      EXPECT_EQ(slot_offset(g, dx), slot_offset(g, x_slot)) << "dx takes x's buffer";
      const Value expected = relu ? folded_grad_reference(p, x, dy) : pool_grad_reference(p)({x, dy});
      expect_equal(evaluate(g, {dx}).front(), expected, "dx");
    }
  }
}

TEST(MaxPool2dGrad, ReluFoldedMustBeZeroOrOne) {
  ir::Attributes a = pool_attrs({2, 2, 2, 2, 0, 0});
  a.set("relu_folded", int64_t{2});
  const OpError e = expect_build_error("max_pool2d_grad", {random_f32({1, 1, 4, 4}, 1), random_f32({1, 1, 2, 2}, 2)},
                                       a, ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("relu_folded is 2, must be 0 or 1"));
}

/// loss = reduce_sum(max_pool2d(relu(y)) * c) and its gradients for `wrt_relu_output`
/// false: {y}; true: {y, relu(y)}. Returns the ops' types, and the gradients' values.
struct ReluPoolRun {
  std::vector<std::string> op_types;
  std::vector<Value> grads;
};

ReluPoolRun relu_pool_gradients(const Value& y, const PoolCfg& p, bool wrt_relu_output) {
  ir::Graph g;
  const ir::TensorId yi = add_inputs(g, {y}).front();
  const ir::TensorId r = g.add_op("relu", {yi}, {}).front();
  const ir::TensorId pooled = g.add_op("max_pool2d", {r}, pool_attrs(p)).front();
  const Value c = random_f32(g.tensor(pooled).shape, 41);
  const ir::TensorId ci = g.add_constant(ir::DType::Float32, c.shape, to_bytes(c));
  const ir::TensorId loss = g.add_op("reduce_sum", {g.add_op("mul", {pooled, ci}, {}).front()}, {}).front();
  std::vector<ir::TensorId> wrt{yi};
  if (wrt_relu_output) wrt.push_back(r);
  const std::vector<ir::TensorId> grads = ir::autodiff(g, loss, wrt);
  ReluPoolRun run;
  for (size_t o = 0; o < g.num_ops(); ++o) run.op_types.push_back(g.op(static_cast<ir::OpId>(o)).schema->name);
  run.grads = evaluate(g, grads);
  return run;
}

TEST(MaxPool2dGrad, AutodiffFoldsReluIntoThePoolGradientWithTheSameValues) {
  const PoolCfg p{2, 2, 2, 2, 0, 0};
  const Value y = random_f32({2, 4, 26, 26}, 51);  // seed 002's conv output, at batch 2 and 4 filters
  const ReluPoolRun fused = relu_pool_gradients(y, p, false);
  const ReluPoolRun plain = relu_pool_gradients(y, p, true);  // relu(y)'s own gradient asked: no folding
  EXPECT_THAT(fused.op_types, ::testing::Not(::testing::Contains("relu_grad")));
  EXPECT_THAT(plain.op_types, ::testing::Contains("relu_grad"));
  ASSERT_EQ(fused.grads.size(), 1u);
  ASSERT_EQ(plain.grads.size(), 2u);
  // Equal values; a zero's sign may differ (relu_grad's dy * 0 keeps a negative dy's sign).
  expect_close(fused.grads[0], plain.grads[0], Tolerance{0.0, 0.0}, "dL/dy, folded against relu_grad");
}

// --- errors --------------------------------------------------------------------------

TEST(MaxPool2d, RankMustBeFour) {
  const OpError e = expect_build_error("max_pool2d", {random_f32({3, 4, 4}, 1)}, make_attrs({{"kernel", Ints{2}}}),
                                ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(e.message, HasSubstr("x must be [N,C,H,W] (rank 4)"));
}

TEST(MaxPool2d, KernelIsRequiredAndChecked) {
  OpError e = expect_build_error("max_pool2d", {random_f32({1, 1, 4, 4}, 1)}, {}, ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("attribute 'kernel'"));
  e = expect_build_error("max_pool2d", {random_f32({1, 1, 4, 4}, 1)}, make_attrs({{"kernel", Ints{2, 2, 2}}}),
                  ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("kernel [2,2,2] must hold 1 or 2 ints >= 1"));
  e = expect_build_error("max_pool2d", {random_f32({1, 1, 4, 4}, 1)}, make_attrs({{"kernel", Ints{5}}}),
                  ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(e.message, HasSubstr("kernel 5x5 is larger than the padded input 4x4"));
  e = expect_build_error("max_pool2d", {random_f32({1, 1, 4, 4}, 1)}, make_attrs({{"kernel", Ints{2}}, {"stride", Ints{0}}}),
                  ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("stride [0] must be empty (= kernel) or hold 1 or 2 ints >= 1"));
}

TEST(MaxPool2d, PaddingAtMostHalfTheKernel) {
  const OpError e = expect_build_error("max_pool2d", {random_f32({1, 1, 4, 4}, 1)},
                                make_attrs({{"kernel", Ints{2}}, {"padding", Ints{2, 1}}}), ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("padding [2,1] must be at most half the kernel [2]"));
}

TEST(MaxPool2dGrad, DyMustBeTheOutputShape) {
  const OpError e = expect_build_error("max_pool2d_grad", {random_f32({1, 2, 4, 4}, 1), random_f32({1, 2, 3, 2}, 2)},
                                make_attrs({{"kernel", Ints{2}}}), ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(e.message, HasSubstr("dy must be the max_pool2d output [1,2,2,2]"));
}

TEST(MaxPool2d, OnlyFloat32) {
  const OpError e = expect_build_error("max_pool2d", {i32({1, 1, 2, 2}, {1, 2, 3, 4})}, make_attrs({{"kernel", Ints{2}}}),
                                ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(e.message, HasSubstr("input 0 must be float32"));
}

TEST(MaxPool2dRelu, IsReluOfMaxPool2dBitForBit) {
  // max_pool2d_relu (the relu-epilogue rewrite's op, core/compile/relu_fusion.h): tiles and
  // general windows.
  const Value x = random_f32({2, 3, 8, 8}, 8, -1.0, 0.2);  // mostly negative: the relu zeroes many maxima
  for (const auto& attrs : {make_attrs({{"kernel", Ints{2}}}),
                            make_attrs({{"kernel", Ints{3}}, {"stride", Ints{2}}, {"padding", Ints{1}}})}) {
    const Value fused = run_op1("max_pool2d_relu", {x}, attrs);
    expect_equal(fused, run_op1("relu", {run_op1("max_pool2d", {x}, attrs)}), "max_pool2d_relu");
    EXPECT_GT(std::count(fused.data.begin(), fused.data.end(), 0.0), 0) << "some outputs the relu zeroes";
  }
}

}  // namespace
}  // namespace plexus::ops::test
