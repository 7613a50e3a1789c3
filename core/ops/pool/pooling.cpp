// 2-D max pooling (PyTorch's MaxPool2d with dilation 1, ceil_mode False) and its gradient:
//   max_pool2d(x [N,C,H,W]; kernel, stride = kernel, padding = 0) -> [N,C,OH,OW]
//     OH = (H + 2*ph - KH) / sh + 1 (floor), OW likewise; padding <= kernel / 2 (as PyTorch)
//     y = the maximum over the window's positions inside the image (padding never wins).
//     Ties: the first maximum in row-major window order. NaN propagates: a NaN in the
//     window is the result (PyTorch's CPU kernel: `if (val > max || isnan(val))`).
//   max_pool2d_grad(x, dy; same attributes, relu_folded = 0) -> dx [N,C,H,W]
//     dx = 0, then dy of every window added at its argmax (overlapping windows add up).
//     relu_folded = 1: the gradient of a relu next to the pool is applied too: a window adds
//     nothing where its max is <= 0 (or NaN; there relu_grad would zero dy). autodiff emits
//     it for relu -> max_pool2d (seed 002's Conv2D -> MaxPooling2D; x is the relu's output)
//     unless x's own gradient is requested, and for max_pool2d -> relu (seed 003's Conv
//     blocks; dy is the relu output's gradient, relu(max) > 0 exactly where max > 0) when
//     the relu alone reads the pool's output and that output's gradient is not requested.
//     relu's rule then adds no relu_grad: one pass over the activations instead of two,
//     the same values (up to a zero's sign: relu_grad's dy * 0 keeps a negative dy's sign,
//     this gives +0).
//   max_pool2d has a relu epilogue (core/compile/relu_fusion.h): relu of each maximum.
// The gradient op recomputes the argmax from x instead of saving indices as a second
// output: one more pass over x (cheap next to the convolutions around it) and no int
// tensor kept alive from the forward to the backward pass.
// Windows that tile the plane (kernel == stride == 2 or 3, no padding) take a branch-free
// fast path (tiled_forward, tiled_grad) with the same results, bit for bit; 2x2 tiles on
// AVX-512 rows (max_pool_avx512.h) where the CPU has it. The kernels are also functions
// (max_pool.h) for the fused conv -> relu -> max-pool ops (conv_pool.cpp).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/ir/graph.h"
#include "core/ops/op_def.h"
#include "core/ops/common/grad_helpers.h"
#include "core/ops/pool/max_pool.h"
#include "core/ops/pool/max_pool_avx512.h"
#include "core/ops/elementwise/relu.h"
#include "core/ops/common/relu_fused.h"
#include "core/ops/common/window_attrs.h"

namespace plexus::ops {

namespace {

using ir::DType;
using ir::ErrorCode;
using ir::TensorId;

/// Whether v takes over from `best` in a window's row-major scan: greater, or NaN (see the
/// file comment; so ties keep the first maximum and the last NaN wins).
inline bool replaces(float v, float best) { return v > best || std::isnan(v); }

/// Row-major index in the plane of window (y, x)'s first maximum (see the file comment).
int64_t window_argmax(const PoolGeometry& p, const float* plane, int64_t y, int64_t x) {
  const int64_t h0 = y * p.sh - p.ph, w0 = x * p.sw - p.pw;
  const int64_t hs = std::max<int64_t>(h0, 0), he = std::min(h0 + p.kh, p.h);
  const int64_t ws = std::max<int64_t>(w0, 0), we = std::min(w0 + p.kw, p.w);
  int64_t best_index = hs * p.w + ws;
  float best = -std::numeric_limits<float>::infinity();
  for (int64_t r = hs; r < he; ++r) {
    const float* row = plane + r * p.w;
    for (int64_t c = ws; c < we; ++c) {
      const float v = row[c];
      if (replaces(v, best)) {
        best = v;
        best_index = r * p.w + c;
      }
    }
  }
  return best_index;
}

// The fast path for windows that tile the plane (kernel == stride, no padding; the seeds'
// MaxPool2d(2)): one output row at a time from its K input rows, the scan of window_argmax
// unrolled into selects (no branches), so GCC vectorises the loop over output columns.
// The scan starts at the window's first value: the general scan's start, -inf at the first
// position, gives way to the first value unless that is -inf too, so both reach the same
// state after one step. Same values, same argmax.

/// The max of window c of the K rows from `top` (row stride w), and (into `k`) its position
/// in row-major window order. `k` is a float (small integers, exact): with an int GCC turns
/// tiled_grad's `k == i` stores into a switch and no longer vectorises the loop.
template <int K>
inline float window_max(const float* top, int64_t w, int64_t c, float& k) {
  float best = top[c * K];
  k = 0.0f;
  for (int i = 1; i < K * K; ++i) {
    const float v = top[(i / K) * w + c * K + i % K];
    const bool take = replaces(v, best);
    best = take ? v : best;
    k = take ? static_cast<float>(i) : k;
  }
  return best;
}

/// Output columns per vector step of the tiled loops: one SSE vector of floats.
constexpr int64_t kColumnBlock = 4;

/// Runs columns(begin, end), a loop over output columns GCC vectorises, over [0, n) as a
/// whole number of kColumnBlock blocks plus, when n is not one, a last block ending at n
/// (it redoes up to kColumnBlock - 1 columns, so the loop body must be idempotent). The
/// vectorised loop's scalar tail then never runs: its compare-and-branch code mispredicts
/// on real data (n = 13 in seed 002: the forward pass ran 2.4x slower). Rows under a block go as they are.
template <class Columns>
inline void for_column_blocks(int64_t n, Columns columns) {
  const int64_t whole = n / kColumnBlock * kColumnBlock;
  columns(int64_t{0}, whole);
  if (whole < n) columns(std::max<int64_t>(n - kColumnBlock, 0), n);
}

/// Whether p's rows go through the AVX-512 2x2 row kernels.
bool avx512_rows(const PoolGeometry& p) {
  return p.tiles(2) && p.ow >= kMaxPoolAvx512MinColumns && max_pool_avx512_available();
}

/// Output row y [p.ow] of K x K tiles from the K input rows from `top` (row stride p.w);
/// with Relu, relu of each maximum (a relu epilogue).
template <int K, bool Relu>
void tiled_row(const float* top, int64_t w, int64_t ow, float* y) {
  for_column_blocks(ow, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      float k;
      const float m = window_max<K>(top, w, c, k);
      y[c] = Relu ? relu(m) : m;
    }
  });
}

/// The gradients of windows [0, n) of the K rows from top (row stride w) into the K rows
/// from dst, window c at dst column c * K; dst's row stride is DstW, or w when DstW is 0
/// (one stride, as in the forward rows).
template <int K, bool ReluFolded, int64_t DstW = 0>
void tiled_grad_windows(const float* top, int64_t w, int64_t n, const float* dy, float* dst) {
  const int64_t dst_w = DstW != 0 ? DstW : w;
  for (int64_t c = 0; c < n; ++c) {
    float k;
    const float best = window_max<K>(top, w, c, k);
    const float d = 0.0f + dy[c];  // as the general path's `0 += dy`: -0 becomes +0
    const float g = !ReluFolded || relu_active(best) ? d : 0.0f;
    for (int i = 0; i < K * K; ++i) dst[(i / K) * dst_w + c * K + i % K] = k == static_cast<float>(i) ? g : 0.0f;
  }
}

/// tiled_grad_row for rows whose last block of kColumnBlock windows is not whole. In place
/// too (dx_top == top): for_column_blocks' last block would redo windows whose x is already
/// overwritten, so that block goes first, into `last`, and only its windows the whole
/// blocks leave are stored from there.
template <int K, bool ReluFolded>
__attribute__((noinline)) void tiled_grad_row_with_tail(const float* top, int64_t w, int64_t ow, const float* dy,
                                                        float* dx_top) {
  const int64_t whole = ow / kColumnBlock * kColumnBlock;
  constexpr int64_t kLastW = kColumnBlock * K;
  const int64_t first = std::max<int64_t>(ow - kColumnBlock, 0);
  float last[K * kLastW];
  tiled_grad_windows<K, ReluFolded, kLastW>(top + first * K, w, ow - first, dy + first, last);
  tiled_grad_windows<K, ReluFolded>(top, w, whole, dy, dx_top);
  for (int64_t r = 0; r < K; ++r) {
    std::copy(last + r * kLastW + (whole - first) * K, last + r * kLastW + (ow - first) * K, dx_top + r * w + whole * K);
  }
}

/// max_pool2d_grad of one output row of K x K tiles: dy [ow] at each window's argmax of x
/// (the K rows from top), zero elsewhere, into the K rows from dx_top (row stride w); in
/// place too (dx_top == top). The rows with a tail go out of line: with the tail inline,
/// seed 003's second pool (rows of 4 windows, the portable path even on AVX-512) ran 15 %
/// slower than before in-place rows, and 5 % slower like this (bench/reduce_bench).
template <int K, bool ReluFolded>
void tiled_grad_row(const float* top, int64_t w, int64_t ow, const float* dy, float* dx_top) {
  if (ow % kColumnBlock != 0) return tiled_grad_row_with_tail<K, ReluFolded>(top, w, ow, dy, dx_top);
  tiled_grad_windows<K, ReluFolded>(top, w, ow, dy, dx_top);
}

/// max_pool2d of K x K tiles: y (p.nc planes of p.oh x p.ow) from x, a row at a time by
/// row(top, w, ow, y_row) (tiled_row, or max_pool2x2_row_avx512 for K = 2).
template <int K, class Row>
void tiled_forward(const PoolGeometry& p, const float* x, float* y, Row row) {
  for (int64_t plane = 0; plane < p.nc; ++plane) {
    for (int64_t r = 0; r < p.oh; ++r) row(x + (plane * p.h + r * K) * p.w, p.w, p.ow, y + (plane * p.oh + r) * p.ow);
  }
}

/// max_pool2d_grad of K x K tiles, a row at a time by row(top, w, ow, dy_row, dx_top)
/// (tiled_grad_row, or max_pool2x2_grad_row_avx512 for K = 2): writes every element of dx
/// (no zeroing pass first), zero in the rows and columns no window covers.
template <int K, class Row>
void tiled_grad(const PoolGeometry& p, const float* x, const float* dy, float* dx, Row row) {
  const int64_t covered_w = p.ow * K;
  for (int64_t plane = 0; plane < p.nc; ++plane) {
    for (int64_t r = 0; r < p.oh; ++r) {
      const int64_t top = (plane * p.h + r * K) * p.w;
      row(x + top, p.w, p.ow, dy + (plane * p.oh + r) * p.ow, dx + top);
      for (int64_t i = 0; i < K; ++i) std::fill(dx + top + i * p.w + covered_w, dx + top + (i + 1) * p.w, 0.0f);
    }
    std::fill(dx + (plane * p.h + p.oh * K) * p.w, dx + (plane + 1) * p.h * p.w, 0.0f);
  }
}

// Reads the attributes for input shape x; `ctx` reports violations (else they are bugs).
PoolGeometry checked_geometry(const ir::Shape& x, const ir::Attributes& attrs, const ir::InferContext* ctx) {
  auto bad = [ctx](ErrorCode code, const std::string& rule) {
    if (ctx) ctx->fail(code, rule);
    ir::fail(ErrorCode::Internal, "max_pool2d: " + rule);
  };
  PoolGeometry p;
  p.nc = x[0] * x[1];
  p.h = x[2];
  p.w = x[3];
  const std::vector<int64_t>& kernel = attrs.get_ints("kernel");
  const std::vector<int64_t>& stride = attrs.get_ints("stride");
  const std::vector<int64_t>& padding = attrs.get_ints("padding");
  if (!pair_attr(kernel, 1, p.kh, p.kw)) bad(ErrorCode::InvalidArgument, "kernel " + ir::shape_string(kernel) + " must hold 1 or 2 ints >= 1");
  if (stride.empty()) {
    p.sh = p.kh;
    p.sw = p.kw;
  } else if (!pair_attr(stride, 1, p.sh, p.sw)) {
    bad(ErrorCode::InvalidArgument, "stride " + ir::shape_string(stride) + " must be empty (= kernel) or hold 1 or 2 ints >= 1");
  }
  if (!pair_attr(padding, 0, p.ph, p.pw)) {
    bad(ErrorCode::InvalidArgument, "padding " + ir::shape_string(padding) + " must hold 1 or 2 ints >= 0");
  }
  if (2 * p.ph > p.kh || 2 * p.pw > p.kw) {
    bad(ErrorCode::InvalidArgument, "padding " + ir::shape_string(padding) + " must be at most half the kernel " +
                                        ir::shape_string(kernel));
  }
  const int64_t hp = p.h + 2 * p.ph, wp = p.w + 2 * p.pw;
  if (hp < p.kh || wp < p.kw) {
    bad(ErrorCode::ShapeMismatch, "kernel " + std::to_string(p.kh) + "x" + std::to_string(p.kw) +
                                      " is larger than the padded input " + std::to_string(hp) + "x" + std::to_string(wp));
  }
  p.oh = (hp - p.kh) / p.sh + 1;
  p.ow = (wp - p.kw) / p.sw + 1;
  return p;
}

ir::Shape out_shape(const ir::Shape& x, const PoolGeometry& p) { return {x[0], x[1], p.oh, p.ow}; }

PoolGeometry check_x(const ir::InferContext& ctx) {
  ctx.expect_dtype(0, DType::Float32);
  if (ctx.rank(0) != 4) ctx.fail(ErrorCode::ShapeMismatch, "x must be [N,C,H,W] (rank 4)");
  return checked_geometry(ctx.shape(0), ctx.attrs, &ctx);
}

std::vector<ir::AttrSpec> pool_attrs() {
  return {{"kernel", ir::AttrKind::Ints, std::nullopt},
          {"stride", ir::AttrKind::Ints, ir::AttrValue{std::vector<int64_t>{}}},
          {"padding", ir::AttrKind::Ints, ir::AttrValue{std::vector<int64_t>{0, 0}}}};
}

/// max_pool2d of K x K tiles, or any windows (Path::General), relu of each maximum with Relu.
template <bool Relu>
void run_forward(const MaxPoolPlan& plan, const float* x, float* y) {
  const PoolGeometry& p = plan.geometry;
  switch (plan.path) {
    case MaxPoolPlan::Path::Avx512Rows:
      return tiled_forward<2>(p, x, y, [](const float* top, int64_t w, int64_t ow, float* yr) {
        max_pool2x2_row_avx512(top, w, ow, yr, Relu);
      });
    case MaxPoolPlan::Path::Tiles2: return tiled_forward<2>(p, x, y, tiled_row<2, Relu>);
    case MaxPoolPlan::Path::Tiles3: return tiled_forward<3>(p, x, y, tiled_row<3, Relu>);
    case MaxPoolPlan::Path::General: break;
  }
  for (int64_t plane = 0; plane < p.nc; ++plane) {
    const float* xp = x + plane * p.h * p.w;
    float* yp = y + plane * p.oh * p.ow;
    for (int64_t r = 0; r < p.oh; ++r) {
      for (int64_t c = 0; c < p.ow; ++c) {
        const float m = xp[window_argmax(p, xp, r, c)];
        yp[r * p.ow + c] = Relu ? relu(m) : m;
      }
    }
  }
}

/// max_pool2d's kernel, with relu applied to each maximum when `relu` (max_pool2d_relu).
Kernel max_pool_kernel(const KernelContext& ctx, bool relu) {
  return [plan = MaxPoolPlan(checked_geometry(ctx.inputs[0]->shape, ctx.op.attrs, nullptr)), x = ctx.input<float>(0),
          y = ctx.output<float>(0), relu] { max_pool_forward(plan, x, y, relu); };
}

OpDef max_pool_def() {
  OpDef d;
  d.name = "max_pool2d";
  d.attrs = pool_attrs();
  d.infer = [](const ir::InferContext& ctx) {
    const PoolGeometry p = check_x(ctx);
    return ir::InferResult{{{DType::Float32, out_shape(ctx.shape(0), p)}}};
  };
  d.kernel = [](const KernelContext& ctx) { return max_pool_kernel(ctx, false); };
  d.grad = [](ir::GradContext& ctx) {
    const TensorId x = ctx.op.inputs[0];
    ir::Attributes attrs = ctx.op.attrs;
    const bool relu_below = produced_by_relu(ctx.graph, x) && !ctx.is_requested(x);
    attrs.set("relu_folded", ir::AttrValue{int64_t{relu_below || relu_folds_into_pool_above(ctx, ctx.op.outputs[0])}});
    return std::vector<TensorId>{ctx.add("max_pool2d_grad", {x, ctx.output_grads[0]}, attrs)};
  };
  return d;
}

/// The general max_pool2d_grad: dy at each window's argmax, summed; with relu_folded,
/// only where the window's max is > 0.
void general_grad(const PoolGeometry& p, const float* x, const float* dy, float* dx, bool relu_folded) {
  std::fill(dx, dx + p.nc * p.h * p.w, 0.0f);
  for (int64_t plane = 0; plane < p.nc; ++plane) {
    const float* xp = x + plane * p.h * p.w;
    const float* dyp = dy + plane * p.oh * p.ow;
    float* dxp = dx + plane * p.h * p.w;
    for (int64_t r = 0; r < p.oh; ++r) {
      for (int64_t c = 0; c < p.ow; ++c) {
        const int64_t at = window_argmax(p, xp, r, c);
        if (!relu_folded || relu_active(xp[at])) dxp[at] += dyp[r * p.ow + c];
      }
    }
  }
}

template <bool ReluFolded>
void run_grad(const MaxPoolPlan& plan, const float* x, const float* dy, float* dx) {
  const PoolGeometry& p = plan.geometry;
  switch (plan.path) {
    case MaxPoolPlan::Path::Avx512Rows:
      return tiled_grad<2>(p, x, dy, dx, [](const float* top, int64_t w, int64_t ow, const float* dyr, float* dx_top) {
        max_pool2x2_grad_row_avx512(top, w, ow, dyr, dx_top, ReluFolded);
      });
    case MaxPoolPlan::Path::Tiles2: return tiled_grad<2>(p, x, dy, dx, tiled_grad_row<2, ReluFolded>);
    case MaxPoolPlan::Path::Tiles3: return tiled_grad<3>(p, x, dy, dx, tiled_grad_row<3, ReluFolded>);
    case MaxPoolPlan::Path::General: return general_grad(p, x, dy, dx, ReluFolded);
  }
}

/// relu_folded is 0 or 1.
void check_relu_folded(const ir::InferContext& ctx) {
  const int64_t folded = ctx.attrs.get_int("relu_folded");
  if (folded != 0 && folded != 1) {
    ctx.fail(ErrorCode::InvalidArgument, "relu_folded is " + std::to_string(folded) + ", must be 0 or 1");
  }
}

OpDef max_pool_grad_def() {
  OpDef d;
  d.name = "max_pool2d_grad";
  d.min_inputs = d.max_inputs = 2;
  d.attrs = pool_attrs();
  d.attrs.push_back({"relu_folded", ir::AttrKind::Int, ir::AttrValue{int64_t{0}}});
  d.infer = [](const ir::InferContext& ctx) {
    const PoolGeometry p = check_x(ctx);
    check_relu_folded(ctx);
    ctx.expect_dtype(1, DType::Float32);
    const ir::Shape y = out_shape(ctx.shape(0), p);
    if (ctx.shape(1) != y) {
      ctx.fail(ErrorCode::ShapeMismatch, "dy must be the max_pool2d output " + ir::shape_string(y));
    }
    return ir::InferResult{{{DType::Float32, ctx.shape(0)}}};
  };
  d.may_inplace = [](const ir::InferContext& ctx) {
    const PoolGeometry p = checked_geometry(ctx.shape(0), ctx.attrs, &ctx);
    return p.tiles(2) || p.tiles(3) ? 0 : -1;  // tiled_grad: a window's x is read before its dx is written
  };
  d.kernel = [](const KernelContext& ctx) -> Kernel {
    return [plan = MaxPoolPlan(checked_geometry(ctx.inputs[0]->shape, ctx.op.attrs, nullptr)), x = ctx.input<float>(0),
            dy = ctx.input<float>(1), dx = ctx.output<float>(0), folded = ctx.op.attrs.get_int("relu_folded") != 0] {
      max_pool_grad(plan, x, dy, dx, folded);
    };
  };
  return d;
}

const OpRegistration max_pool_op{max_pool_def()};
const OpRegistration max_pool_relu_op{
    relu_fused_def(max_pool_def(), [](const KernelContext& ctx) { return max_pool_kernel(ctx, true); })};
const OpRegistration max_pool_grad_op{max_pool_grad_def()};

MaxPoolPlan::Path path_of(const PoolGeometry& p) {
  if (avx512_rows(p)) return MaxPoolPlan::Path::Avx512Rows;
  if (p.tiles(2)) return MaxPoolPlan::Path::Tiles2;
  return p.tiles(3) ? MaxPoolPlan::Path::Tiles3 : MaxPoolPlan::Path::General;
}

}  // namespace

MaxPoolPlan::MaxPoolPlan(const PoolGeometry& g) : geometry(g), path(path_of(g)) {}

PoolGeometry pool_geometry(const ir::Shape& x, const ir::Attributes& attrs) { return checked_geometry(x, attrs, nullptr); }

void max_pool_forward(const MaxPoolPlan& plan, const float* x, float* y, bool relu) {
  relu ? run_forward<true>(plan, x, y) : run_forward<false>(plan, x, y);
}

void max_pool_grad(const MaxPoolPlan& plan, const float* x, const float* dy, float* dx, bool relu_folded) {
  relu_folded ? run_grad<true>(plan, x, dy, dx) : run_grad<false>(plan, x, dy, dx);
}

}  // namespace plexus::ops
