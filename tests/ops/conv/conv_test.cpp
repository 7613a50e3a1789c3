// conv2d (core/ops/conv/conv.cpp): PyTorch's Conv2d (cross-correlation, zero padding, no
// dilation or groups), y[n,f,oh,ow] = b[f] + sum_{c,i,j} x[n,c,oh*sh-ph+i,ow*sw-pw+j] w[f,c,i,j],
// and its gradient ops conv2d_grad_input / conv2d_grad_weight (db is a reduce_sum).
// References are direct convolution loops in double.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <string>
#include <tuple>

#include "core/ir/autodiff.h"
#include "core/ops/conv/conv_direct.h"
#include "core/session/session.h"
#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

struct Conv {
  int64_t sh = 1, sw = 1, ph = 0, pw = 0;
};

ir::Attributes conv_attrs(const Conv& c) {
  return make_attrs({{"stride", Ints{c.sh, c.sw}}, {"padding", Ints{c.ph, c.pw}}});
}

size_t at4(const ir::Shape& s, int64_t a, int64_t b, int64_t c, int64_t d) {
  return static_cast<size_t>(((a * s[1] + b) * s[2] + c) * s[3] + d);
}

int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p) { return (in + 2 * p - k) / s + 1; }

// Calls row(n, f, c, i, j, oh, ih, lo, hi) for every output row oh of every (image n,
// filter f, channel c, kernel tap i, j) whose input row ih = oh*sh - ph + i lies inside the
// image; [lo, hi) are the output columns ow whose input column ow*sw - pw + j does. The
// references below run their innermost loop over those columns.
template <class Row>
void for_each_row(const ir::Shape& x, const ir::Shape& w, const Conv& cv, Row row) {
  const int64_t oh_n = out_size(x[2], w[2], cv.sh, cv.ph), ow_n = out_size(x[3], w[3], cv.sw, cv.pw);
  for (int64_t n = 0; n < x[0]; ++n) {
    for (int64_t f = 0; f < w[0]; ++f) {
      for (int64_t c = 0; c < x[1]; ++c) {
        for (int64_t i = 0; i < w[2]; ++i) {
          for (int64_t j = 0; j < w[3]; ++j) {
            int64_t lo = 0;
            while (lo < ow_n && lo * cv.sw - cv.pw + j < 0) ++lo;
            int64_t hi = ow_n;
            while (hi > lo && (hi - 1) * cv.sw - cv.pw + j >= x[3]) --hi;
            for (int64_t oh = 0; oh < oh_n; ++oh) {
              const int64_t ih = oh * cv.sh - cv.ph + i;
              if (ih >= 0 && ih < x[2]) row(n, f, c, i, j, oh, ih, lo, hi);
            }
          }
        }
      }
    }
  }
}

ir::Shape conv_out_shape(const ir::Shape& x, const ir::Shape& w, const Conv& cv) {
  return {x[0], w[0], out_size(x[2], w[2], cv.sh, cv.ph), out_size(x[3], w[3], cv.sw, cv.pw)};
}

Value zeros4(const ir::Shape& s) {
  return Value{ir::DType::Float32, s, std::vector<double>(static_cast<size_t>(s[0] * s[1] * s[2] * s[3]), 0.0)};
}

// conv2d(x, w [, b]) in double: y[n,f,oh,ow] = b[f] + sum_{c,i,j} x[n,c,ih,iw] w[f,c,i,j].
Reference conv_reference(Conv cv) {
  return [cv](const std::vector<Value>& in) {
    const Value &x = in[0], &w = in[1];
    Value y = zeros4(conv_out_shape(x.shape, w.shape, cv));
    const ir::Shape& ys = y.shape;
    if (in.size() == 3) {
      for (size_t k = 0; k < y.data.size(); ++k) y.data[k] = in[2].data[(k / static_cast<size_t>(ys[2] * ys[3])) % static_cast<size_t>(ys[1])];
    }
    for_each_row(x.shape, w.shape, cv, [&](int64_t n, int64_t f, int64_t c, int64_t i, int64_t j, int64_t oh,
                                           int64_t ih, int64_t lo, int64_t hi) {
      const double wv = w.data[at4(w.shape, f, c, i, j)];
      const size_t xr = at4(x.shape, n, c, ih, 0) + static_cast<size_t>(j - cv.pw), yr = at4(ys, n, f, oh, 0);
      for (int64_t ow = lo; ow < hi; ++ow) {
        y.data[yr + static_cast<size_t>(ow)] += wv * x.data[xr + static_cast<size_t>(ow * cv.sw)];
      }
    });
    return y;
  };
}

// conv2d_grad_input(dy, w) in double: dx[n,c,ih,iw] = sum of dy[n,f,oh,ow] w[f,c,i,j].
Reference grad_input_reference(Conv cv, ir::Shape x_shape) {
  return [cv, x_shape](const std::vector<Value>& in) {
    const Value &dy = in[0], &w = in[1];
    Value dx = zeros4(x_shape);
    for_each_row(x_shape, w.shape, cv, [&](int64_t n, int64_t f, int64_t c, int64_t i, int64_t j, int64_t oh,
                                           int64_t ih, int64_t lo, int64_t hi) {
      const double wv = w.data[at4(w.shape, f, c, i, j)];
      const size_t dyr = at4(dy.shape, n, f, oh, 0), dxr = at4(x_shape, n, c, ih, 0) + static_cast<size_t>(j - cv.pw);
      for (int64_t ow = lo; ow < hi; ++ow) {
        dx.data[dxr + static_cast<size_t>(ow * cv.sw)] += wv * dy.data[dyr + static_cast<size_t>(ow)];
      }
    });
    return dx;
  };
}

// conv2d_grad_weight(x, dy) in double: dw[f,c,i,j] = sum of dy[n,f,oh,ow] x[n,c,ih,iw].
Reference grad_weight_reference(Conv cv, ir::Shape w_shape) {
  return [cv, w_shape](const std::vector<Value>& in) {
    const Value &x = in[0], &dy = in[1];
    Value dw = zeros4(w_shape);
    for_each_row(x.shape, w_shape, cv, [&](int64_t n, int64_t f, int64_t c, int64_t i, int64_t j, int64_t oh,
                                           int64_t ih, int64_t lo, int64_t hi) {
      const size_t dyr = at4(dy.shape, n, f, oh, 0), xr = at4(x.shape, n, c, ih, 0) + static_cast<size_t>(j - cv.pw);
      double sum = 0.0;
      for (int64_t ow = lo; ow < hi; ++ow) {
        sum += dy.data[dyr + static_cast<size_t>(ow)] * x.data[xr + static_cast<size_t>(ow * cv.sw)];
      }
      dw.data[at4(w_shape, f, c, i, j)] += sum;
    });
    return dw;
  };
}

TEST(Conv2d, SmallCaseIsExact) {
  // x = 1..16 as [1,1,4,4], w = [[1,0],[0,-1]] plus bias 0.5: y = x[i,j] - x[i+1,j+1] + 0.5 = -4.5.
  std::vector<double> xs(16);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<double>(i + 1);
  const Value x = f32({1, 1, 4, 4}, xs), w = f32({1, 1, 2, 2}, {1, 0, 0, -1}), b = f32({1}, {0.5});
  expect_equal(run_op1("conv2d", {x, w, b}), f32({1, 1, 3, 3}, std::vector<double>(9, -4.5)), "stride 1");
  // Stride 2, padding 1: windows start at -1, 1, 3; w's corners are (i,j) and (i+1,j+1).
  // Output (0,0) sees only x[0,0] through w[1,1] = -1; output (2,2) only x[3,3] through w[0,0].
  const Value y = run_op1("conv2d", {x, w}, make_attrs({{"stride", Ints{2}}, {"padding", Ints{1}}}));
  expect_equal(y, f32({1, 1, 3, 3}, {-1, -3, 0, -9, -5, 8, 0, 14, 16}), "stride 2, padding 1");
}

TEST(Conv2d, DefaultAttributesAreStrideOneNoPadding) {
  const Value x = random_f32({2, 3, 6, 5}, 1), w = random_f32({4, 3, 3, 2}, 2);
  expect_forward("conv2d", {x, w}, {}, conv_reference({}));
}

// (stride, padding, with bias): every combination of stride 1 / 2 and padding 0 / 1, with
// and without bias, plus non-square strides and paddings, on a small odd-sized input whose
// last rows and columns stride 2 drops (floor mode).
using ConvCase = std::tuple<Conv, bool>;

class Conv2dShapes : public ::testing::TestWithParam<ConvCase> {};

TEST_P(Conv2dShapes, ForwardAndGradientsMatchDoubleReference) {
  const auto& [cv, bias] = GetParam();
  std::vector<Value> in{random_f32({2, 3, 7, 6}, 11), random_f32({4, 3, 3, 2}, 12)};
  if (bias) in.push_back(random_f32({4}, 13));
  expect_gradients("conv2d", in, conv_attrs(cv), conv_reference(cv));
}

std::string conv_case_name(const ::testing::TestParamInfo<ConvCase>& info) {
  const auto& [cv, bias] = info.param;
  return "stride" + std::to_string(cv.sh) + "x" + std::to_string(cv.sw) + "_pad" + std::to_string(cv.ph) + "x" +
         std::to_string(cv.pw) + (bias ? "_bias" : "_nobias");
}

INSTANTIATE_TEST_SUITE_P(StridesAndPaddings, Conv2dShapes,
                         ::testing::Combine(::testing::Values(Conv{1, 1, 0, 0}, Conv{1, 1, 1, 1}, Conv{2, 2, 0, 0},
                                                              Conv{2, 2, 1, 1}, Conv{2, 1, 0, 1}, Conv{1, 3, 2, 0}),
                                            ::testing::Bool()),
                         conv_case_name);

// Seed 003's two layers (PopTorch mnist_pipeline: Conv2d(1,10,5) on 28x28, Conv2d(10,20,5) on
// the pooled 12x12) and seed 002's (Conv2D(32, 3x3) on 28x28) at batch 2, with bias. K =
// C*5*5 = 250 products per output of layer 2: kForwardTolerance budgets K <= 64, so 1e-4
// absolute, as the matmul test's K = 320. The gradients sum up to N*OH*OW = 1352 products
// (dw of seed 002's layer) of O(1) terms, within kGradientTolerance's budget. Differentiating
// the double reference at all 5,000 weights of layer 2 would take seconds, so 60 elements of
// each input are checked (a wrong rule is wrong almost everywhere; the small shapes above
// check every element).
TEST(Conv2d, SeedLayerShapesWithGradients) {
  struct Layer {
    ir::Shape x, w;
    Conv cv;
  };
  const Layer layers[] = {{{2, 1, 28, 28}, {10, 1, 5, 5}, {}},
                          {{2, 10, 12, 12}, {20, 10, 5, 5}, {}},
                          {{2, 10, 12, 12}, {20, 10, 5, 5}, {2, 2, 1, 1}},
                          {{2, 1, 28, 28}, {32, 1, 3, 3}, {}}};
  uint32_t seed = 20;
  for (const Layer& l : layers) {
    SCOPED_TRACE(testing::Message() << "x " << ir::shape_string(l.x) << " w " << ir::shape_string(l.w) << " stride "
                                    << l.cv.sh << " padding " << l.cv.ph);
    const std::vector<Value> in{random_f32(l.x, seed), random_f32(l.w, seed + 1), random_f32({l.w[0]}, seed + 2)};
    seed += 3;
    GradCheckOptions options;
    options.forward = Tolerance{1e-4, 1e-5};
    options.sample = 60;
    expect_gradients("conv2d", in, conv_attrs(l.cv), conv_reference(l.cv), options);
  }
}

// The ops on their own, at shapes that take each of the kernels' paths (conv_gemm.h,
// conv_direct.h): one image per GEMM for the forward and grad_input passes always;
// grad_weight sums at least 512 pixels per GEMM (or direct pass), so it takes the whole batch
// at once (small images), chunks of images with a shorter last chunk, or one image at a time
// (OH*OW >= 512); a 1x1 kernel with stride 1 and no padding uses x (dx) as the column
// matrix, except where grad_weight gathers images. Stride 1 without padding takes the direct
// kernels on AVX2 CPUs: full and partial (OW % 8) pixel vectors, 1 to 6 filters per tile.
struct PathCase {
  const char* name;
  ir::Shape x, w;
  Conv cv;
};

const PathCase kPaths[] = {
    {"grad_weight: whole batch in one GEMM (30 pixels per image)", {3, 2, 9, 8}, {3, 2, 3, 3}, {2, 1, 1, 0}},
    {"grad_weight: chunks of 6 images, last of 2 (100 pixels per image)", {8, 2, 12, 12}, {3, 2, 3, 3}, {}},
    {"grad_weight: one image per GEMM (4096 pixels per image)", {2, 16, 64, 64}, {16, 16, 3, 3}, {1, 1, 1, 1}},
    {"1x1 kernel, one image per GEMM: x is the column matrix", {2, 72, 64, 64}, {72, 72, 1, 1}, {}},
    {"1x1 kernel, grad_weight gathers 6 images", {6, 4, 8, 8}, {5, 4, 1, 1}, {}},
};

// The products per output in these shapes reach 16*9 = 144 (K) and 2*64*64 = 8192
// (dw's N*OH*OW): worst-case float32 error ~ count * 6e-8 * |partial sum|; the relative
// part (1e-4) covers the long dw sums, whose values are O(sqrt(count)).
constexpr Tolerance kLongSums{2e-4, 1e-4};

TEST(Conv2d, EveryKernelPathMatchesDoubleReference) {
  uint32_t seed = 40;
  for (const PathCase& p : kPaths) {
    SCOPED_TRACE(p.name);
    const Value x = random_f32(p.x, seed), w = random_f32(p.w, seed + 1), b = random_f32({p.w[0]}, seed + 2);
    const Value dy = random_f32(conv_out_shape(p.x, p.w, p.cv), seed + 3);
    seed += 4;
    expect_forward("conv2d", {x, w, b}, conv_attrs(p.cv), conv_reference(p.cv), kLongSums);
    ir::Attributes gi = conv_attrs(p.cv);
    gi.set("input_shape", p.x);
    expect_forward("conv2d_grad_input", {dy, w}, gi, grad_input_reference(p.cv, p.x), kLongSums);
    ir::Attributes gw = conv_attrs(p.cv);
    gw.set("weight_shape", p.w);
    expect_forward("conv2d_grad_weight", {x, dy}, gw, grad_weight_reference(p.cv, p.w), kLongSums);
  }
}

TEST(Conv2d, NotesReportTheKernels) {
  // Seed 003's second layer: stride 1, no padding, so every conv op runs the direct kernels
  // where the CPU has AVX2 and FMA; elsewhere BLIS's sup kernels, grad_weight on
  // 512 / (8*8) = 8 images per GEMM.
  ir::Graph g;
  const std::vector<ir::TensorId> ids = add_inputs(g, {random_f32({40, 10, 12, 12}, 1), random_f32({20, 10, 5, 5}, 2)});
  const ir::TensorId y = g.add_op("conv2d", ids, {}).front();
  ir::Attributes gw;
  gw.set("weight_shape", std::vector<int64_t>{20, 10, 5, 5});
  g.add_op("conv2d_grad_weight", {ids[0], y}, gw);
  ir::Attributes gi;
  gi.set("input_shape", std::vector<int64_t>{40, 10, 12, 12});
  g.add_op("conv2d_grad_input", {y, ids[1]}, gi);
  session::SessionOptions options;
  options.threads_per_device = 1;
  const session::Session session(g, options);
  ASSERT_EQ(session.notes().size(), 3u);
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && DirectConv::best_isa() == DirectIsa::Avx512;
  EXPECT_THAT(session.notes()[0], HasSubstr(avx512 ? "conv2d#0: direct AVX-512"
                                            : avx2 ? "conv2d#0: direct AVX2"
                                                   : "conv2d#0: "));
  EXPECT_THAT(session.notes()[1], HasSubstr(avx512 ? "conv2d_grad_weight#1: direct AVX-512"
                                            : avx2 ? "conv2d_grad_weight#1: direct AVX2"
                                                   : "8 image(s) per GEMM"));
  EXPECT_THAT(session.notes()[2], HasSubstr(avx512 ? "conv2d_grad_input#2: direct AVX-512"
                                            : avx2 ? "conv2d_grad_input#2: direct AVX2"
                                                   : "1 image(s) per GEMM"));
}

// The im2col + sup path on the same layer, with padding 1 (the direct kernels need none):
// one image per GEMM for conv2d and conv2d_grad_input.
TEST(Conv2d, NotesReportTheSupKernelsWithPadding) {
  ir::Graph g;
  const std::vector<ir::TensorId> ids = add_inputs(g, {random_f32({40, 10, 12, 12}, 1), random_f32({20, 10, 5, 5}, 2)});
  g.add_op("conv2d", ids, make_attrs({{"padding", Ints{1}}}));
  session::SessionOptions options;
  options.threads_per_device = 1;
  const session::Session session(g, options);
  ASSERT_EQ(session.notes().size(), 1u);
  EXPECT_THAT(session.notes()[0], HasSubstr("conv2d#0: "));
  EXPECT_THAT(session.notes()[0], HasSubstr(" sup "));
  EXPECT_THAT(session.notes()[0], HasSubstr("1 image(s) per GEMM"));
}

TEST(Conv2d, GradientOpsAreAddedByAutodiffOnlyWhereNeeded) {
  // x is a constant (an image): no conv2d_grad_input, as for the seed's first layer.
  ir::Graph g;
  const Value xv = random_f32({2, 1, 6, 6}, 1);
  const ir::TensorId x = g.add_constant(ir::DType::Float32, xv.shape, to_bytes(xv));
  const std::vector<ir::TensorId> wb = add_inputs(g, {random_f32({3, 1, 3, 3}, 2), random_f32({3}, 3)});
  const ir::TensorId y = g.add_op("conv2d", {x, wb[0], wb[1]}, {}).front();
  const ir::TensorId loss = g.add_op("reduce_sum", {y}, {}).front();
  ir::autodiff(g, loss, wb);
  std::vector<std::string> types;
  for (const ir::Op& op : g.ops()) types.push_back(op.schema->name);
  EXPECT_THAT(types, ::testing::Contains("conv2d_grad_weight"));
  EXPECT_THAT(types, ::testing::Not(::testing::Contains("conv2d_grad_input")));
}

// --- errors --------------------------------------------------------------------------

TEST(Conv2d, ChannelMismatchNamesBothCounts) {
  const OpError e = expect_build_error("conv2d", {random_f32({1, 3, 5, 5}, 1), random_f32({2, 4, 3, 3}, 2)}, {},
                                ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(e.message, HasSubstr("(float32[1,3,5,5], float32[2,4,3,3])"));
  EXPECT_THAT(e.message, HasSubstr("x has 3 channels but w expects 4"));
}

TEST(Conv2d, RanksOtherThanFourAreRejected) {
  OpError e = expect_build_error("conv2d", {random_f32({3, 5, 5}, 1), random_f32({2, 3, 3, 3}, 2)}, {},
                          ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(e.message, HasSubstr("x [N,C,H,W] must have rank 4, got [3,5,5]"));
  e = expect_build_error("conv2d", {random_f32({1, 3, 5, 5}, 1), random_f32({2, 27}, 2)}, {}, ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(e.message, HasSubstr("w [F,C,KH,KW] must have rank 4, got [2,27]"));
}

TEST(Conv2d, BiasMustBeOnePerFilter) {
  const OpError e = expect_build_error("conv2d", {random_f32({1, 3, 5, 5}, 1), random_f32({2, 3, 3, 3}, 2), random_f32({3}, 3)},
                                {}, ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(e.message, HasSubstr("b must be [F] = [2], got [3]"));
}

TEST(Conv2d, KernelLargerThanPaddedInput) {
  const OpError e = expect_build_error("conv2d", {random_f32({1, 1, 4, 6}, 1), random_f32({1, 1, 7, 3}, 2)},
                                make_attrs({{"padding", Ints{1, 0}}}), ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(e.message, HasSubstr("kernel 7x3 is larger than the padded input 6x6"));
}

TEST(Conv2d, BadStrideAndPaddingAttributes) {
  const std::vector<Value> in{random_f32({1, 1, 5, 5}, 1), random_f32({1, 1, 3, 3}, 2)};
  OpError e = expect_build_error("conv2d", in, make_attrs({{"stride", Ints{0, 1}}}), ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("stride [0,1] must hold 1 or 2 ints >= 1"));
  e = expect_build_error("conv2d", in, make_attrs({{"stride", Ints{1, 1, 1}}}), ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("stride [1,1,1] must hold 1 or 2 ints >= 1"));
  e = expect_build_error("conv2d", in, make_attrs({{"padding", Ints{-1}}}), ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("padding [-1] must hold 1 or 2 ints >= 0"));
}

TEST(Conv2d, OnlyFloat32) {
  const OpError e = expect_build_error("conv2d", {i32({1, 1, 2, 2}, {1, 2, 3, 4}), i32({1, 1, 1, 1}, {1})}, {},
                                ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(e.message, HasSubstr("input 0 must be float32"));
}

TEST(Conv2dGradOps, ShapesAreChecked) {
  const Conv cv{2, 2, 1, 1};
  ir::Attributes gi = conv_attrs(cv);
  gi.set("input_shape", Ints{1, 3, 7, 7});
  // x [1,3,7,7] * w [2,3,3,3], stride 2, padding 1 -> dy [1,2,4,4].
  OpError e = expect_build_error("conv2d_grad_input", {random_f32({1, 2, 3, 4}, 1), random_f32({2, 3, 3, 3}, 2)}, gi,
                          ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(e.message, HasSubstr("dy must be the conv2d output [N,F,OH,OW] = [1,2,4,4] for stride [2,2], padding [1,1]"));
  gi.set("input_shape", Ints{1, 3, 7});
  e = expect_build_error("conv2d_grad_input", {random_f32({1, 2, 4, 4}, 1), random_f32({2, 3, 3, 3}, 2)}, gi,
                  ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("input_shape [1,3,7] must hold 4 dims >= 1"));
  ir::Attributes gw = conv_attrs(cv);
  gw.set("weight_shape", Ints{2, 4, 3, 3});
  e = expect_build_error("conv2d_grad_weight", {random_f32({1, 3, 7, 7}, 1), random_f32({1, 2, 4, 4}, 2)}, gw,
                  ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(e.message, HasSubstr("weight_shape and x have different channel counts"));
  e = expect_build_error("conv2d_grad_weight", {random_f32({1, 3, 7, 7}, 1), random_f32({1, 2, 4, 4}, 2)}, conv_attrs(cv),
                  ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("attribute 'weight_shape'"));
}

TEST(Conv2dRelu, IsReluOfConv2dBitForBit) {
  // conv2d_relu (the relu-epilogue rewrite's op, core/compile/relu_fusion.h) on each kernel
  // path: with and without bias, strided and padded.
  const Value x = random_f32({2, 3, 7, 6}, 5), w = random_f32({4, 3, 3, 3}, 6), b = random_f32({4}, 7);
  for (const auto& attrs : {make_attrs({}), make_attrs({{"stride", Ints{2}}, {"padding", Ints{1}}})}) {
    for (const std::vector<Value>& in : {std::vector<Value>{x, w}, std::vector<Value>{x, w, b}}) {
      const Value fused = run_op1("conv2d_relu", in, attrs);
      expect_equal(fused, run_op1("relu", {run_op1("conv2d", in, attrs)}), "conv2d_relu");
      EXPECT_GT(std::count(fused.data.begin(), fused.data.end(), 0.0), 0) << "some outputs the relu zeroes";
    }
  }
}

}  // namespace
}  // namespace plexus::ops::test
