// 2-D convolution (PyTorch's Conv2d: cross-correlation, zero padding, no dilation or groups)
// and its gradient ops:
//   conv2d(x [N,C,H,W], w [F,C,KH,KW] [, b [F]]; stride, padding) -> y [N,F,OH,OW]
//     OH = (H + 2*ph - KH) / sh + 1, OW likewise (floor division)
//   conv2d_grad_input(dy [N,F,OH,OW], w; stride, padding, input_shape) -> dx [N,C,H,W]
//   conv2d_grad_weight(x, dy; stride, padding, weight_shape) -> dw [F,C,KH,KW]
// and db = reduce_sum(dy, axes {0,2,3}).
//
// Every kernel is im2col / col2im plus one BLIS GEMM (gemm.h, kernel set chosen per shape)
// per chunk of G images. With K = C*KH*KW and P = OH*OW, the column matrix of a chunk is
// col [K, G*P], col[(c*KH + i)*KW + j, g*P + oh*OW + ow] = x[n0+g, c, oh*sh - ph + i, ow*sw - pw + j]
// (0 outside the image), and
//   forward      Y [F, G*P]  = W [F,K] @ col                 (m=F, k=K,   n=G*P)
//   grad_input   dcol [K, G*P] = W^T @ dY [F, G*P]; col2im    (m=K, k=F,   n=G*P)
//   grad_weight  dW [F,K]   += dY [F, G*P] @ col^T            (m=F, k=G*P, n=K)
// With G = 1 the GEMM reads and writes the NCHW tensors directly; with G > 1 the [F, G*P]
// operand is gathered from / scattered to NCHW in scratch. G is chosen from the shape so
// that the chunk's scratch stays within kChunkScratchBytes (batching small images into one
// wide GEMM is what makes BLIS efficient on them; bench/conv_bench.cpp measures it).
// Scratch (InferResult::scratch_bytes) holds col and, for G > 1, the [F, G*P] operand.
// Results do not depend on the thread count or on timing: the chunks run in a fixed order.
#include <algorithm>
#include <cstring>
#include <string>

#include "core/ir/graph.h"
#include "core/ops/gemm.h"
#include "core/ops/window_attrs.h"

namespace plexus::ops {

namespace {

using ir::DType;
using ir::ErrorCode;
using ir::TensorId;

/// Largest scratch of one chunk of images when G > 1. Larger chunks gain little once the
/// GEMM's n = G*P is in the thousands, and the col matrix should stay in L2/L3.
constexpr int64_t kChunkScratchBytes = int64_t{4} << 20;

struct Geometry {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input
  int64_t f = 0, kh = 0, kw = 0;       // filters
  int64_t sh = 1, sw = 1, ph = 0, pw = 0;
  int64_t oh = 0, ow = 0;

  int64_t k() const { return c * kh * kw; }
  int64_t p() const { return oh * ow; }
  int64_t image() const { return c * h * w; }
  int64_t out_image() const { return f * p(); }
  /// Images per GEMM: all of them when col [K, N*P] and the [F, N*P] operand fit in
  /// kChunkScratchBytes, else as many as fit (at least 1).
  int64_t chunk() const {
    const int64_t per_image = (k() + f) * p() * static_cast<int64_t>(sizeof(float));
    return std::clamp<int64_t>(kChunkScratchBytes / std::max<int64_t>(per_image, 1), 1, n);
  }
  /// Scratch floats: col [K, G*P], plus the [F, G*P] operand when G > 1.
  int64_t scratch_floats() const {
    const int64_t g = chunk();
    return k() * g * p() + (g > 1 ? f * g * p() : 0);
  }
  std::string to_string() const {
    return "stride [" + std::to_string(sh) + "," + std::to_string(sw) + "], padding [" + std::to_string(ph) + "," +
           std::to_string(pw) + "]";
  }
};

// Fills the stride / padding fields from the attributes; `ctx` reports a bad value.
void read_attrs(const ir::Attributes& attrs, Geometry& g, const ir::InferContext* ctx) {
  if (!pair_attr(attrs.get_ints("stride"), 1, g.sh, g.sw)) {
    if (ctx) ctx->fail(ErrorCode::InvalidArgument, "stride " + ir::shape_string(attrs.get_ints("stride")) +
                                                       " must hold 1 or 2 ints >= 1");
    ir::fail(ErrorCode::Internal, "conv: bad stride");
  }
  if (!pair_attr(attrs.get_ints("padding"), 0, g.ph, g.pw)) {
    if (ctx) ctx->fail(ErrorCode::InvalidArgument, "padding " + ir::shape_string(attrs.get_ints("padding")) +
                                                       " must hold 1 or 2 ints >= 0");
    ir::fail(ErrorCode::Internal, "conv: bad padding");
  }
}

// Output size from input, kernel, stride and padding; fails when the kernel does not fit.
void output_size(Geometry& g, const ir::InferContext* ctx) {
  const int64_t hp = g.h + 2 * g.ph, wp = g.w + 2 * g.pw;
  if (hp < g.kh || wp < g.kw) {
    const std::string rule = "kernel " + std::to_string(g.kh) + "x" + std::to_string(g.kw) +
                             " is larger than the padded input " + std::to_string(hp) + "x" + std::to_string(wp);
    if (ctx) ctx->fail(ErrorCode::ShapeMismatch, rule);
    ir::fail(ErrorCode::Internal, rule);
  }
  g.oh = (hp - g.kh) / g.sh + 1;
  g.ow = (wp - g.kw) / g.sw + 1;
}

// Geometry of a forward op from x [N,C,H,W] and w [F,C,KH,KW].
Geometry geometry(const ir::Shape& x, const ir::Shape& w, const ir::Attributes& attrs, const ir::InferContext* ctx) {
  Geometry g;
  g.n = x[0], g.c = x[1], g.h = x[2], g.w = x[3];
  g.f = w[0], g.kh = w[2], g.kw = w[3];
  read_attrs(attrs, g, ctx);
  output_size(g, ctx);
  return g;
}

ir::Shape out_shape(const Geometry& g) { return {g.n, g.f, g.oh, g.ow}; }

// --- im2col / col2im -------------------------------------------------------------------

// Range [lo, hi) of output columns ow whose input column ow*sw - pw + j lies in [0, W).
void valid_columns(const Geometry& g, int64_t j, int64_t& lo, int64_t& hi) {
  const int64_t first = g.pw - j;  // ow*sw >= first
  lo = first <= 0 ? 0 : (first + g.sw - 1) / g.sw;
  const int64_t last = g.w - 1 + g.pw - j;  // ow*sw <= last
  hi = last < 0 ? 0 : std::min(g.ow, last / g.sw + 1);
  lo = std::min(lo, hi);
}

// col rows (c, i, j) x columns [offset, offset + P) from one image; `ld` = row stride.
void im2col(const Geometry& g, const float* x, float* col, int64_t ld) {
  for (int64_t c = 0; c < g.c; ++c) {
    const float* xc = x + c * g.h * g.w;
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        float* row = col + ((c * g.kh + i) * g.kw + j) * ld;
        int64_t lo = 0, hi = 0;
        valid_columns(g, j, lo, hi);
        for (int64_t oh = 0; oh < g.oh; ++oh) {
          float* out = row + oh * g.ow;
          const int64_t hi_in = oh * g.sh - g.ph + i;
          if (hi_in < 0 || hi_in >= g.h) {
            std::fill(out, out + g.ow, 0.0f);
            continue;
          }
          const float* xr = xc + hi_in * g.w - g.pw + j;  // xr[ow*sw] is input column ow*sw - pw + j
          std::fill(out, out + lo, 0.0f);
          if (g.sw == 1) {
            std::memcpy(out + lo, xr + lo, static_cast<size_t>(hi - lo) * sizeof(float));
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) out[ow] = xr[ow * g.sw];
          }
          std::fill(out + hi, out + g.ow, 0.0f);
        }
      }
    }
  }
}

// dx (one image, zeroed by the caller) += the col rows scattered back (im2col's adjoint).
void col2im(const Geometry& g, const float* col, int64_t ld, float* dx) {
  for (int64_t c = 0; c < g.c; ++c) {
    float* dxc = dx + c * g.h * g.w;
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        const float* row = col + ((c * g.kh + i) * g.kw + j) * ld;
        int64_t lo = 0, hi = 0;
        valid_columns(g, j, lo, hi);
        for (int64_t oh = 0; oh < g.oh; ++oh) {
          const int64_t hi_in = oh * g.sh - g.ph + i;
          if (hi_in < 0 || hi_in >= g.h) continue;
          const float* in = row + oh * g.ow;
          float* dr = dxc + hi_in * g.w - g.pw + j;
          if (g.sw == 1) {
            for (int64_t ow = lo; ow < hi; ++ow) dr[ow] += in[ow];
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) dr[ow * g.sw] += in[ow];
          }
        }
      }
    }
  }
}

// [F, G*P] (column block g = image n0+g) <-> NCHW images n0 .. n0+G-1.
void gather_images(const Geometry& g, const float* y, int64_t images, float* out) {
  const int64_t p = g.p(), ld = images * p;
  for (int64_t f = 0; f < g.f; ++f) {
    for (int64_t i = 0; i < images; ++i) {
      std::memcpy(out + f * ld + i * p, y + (i * g.f + f) * p, static_cast<size_t>(p) * sizeof(float));
    }
  }
}

// y[n0+i, f, :] = buf[f, i*P .. (i+1)*P) + b[f] (b may be null).
void scatter_images(const Geometry& g, const float* buf, int64_t images, const float* b, float* y) {
  const int64_t p = g.p(), ld = images * p;
  for (int64_t f = 0; f < g.f; ++f) {
    const float bias = b ? b[f] : 0.0f;
    for (int64_t i = 0; i < images; ++i) {
      const float* src = buf + f * ld + i * p;
      float* dst = y + (i * g.f + f) * p;
      for (int64_t q = 0; q < p; ++q) dst[q] = src[q] + bias;
    }
  }
}

// --- GEMM plans ------------------------------------------------------------------------

// One plan for the full chunks and one for the last, shorter chunk (when N % G != 0).
struct ChunkGemms {
  int64_t images = 1;  // G
  Gemm full, last;
  int64_t last_images = 0;
};

// `shape(images)` gives the GEMM shape of a chunk of that many images.
template <class ShapeOf>
ChunkGemms plan_chunks(const ir::KernelContext& ctx, const Geometry& g, ShapeOf shape_of) {
  ChunkGemms plans;
  plans.images = g.chunk();
  plans.full = Gemm::plan(shape_of(plans.images), ctx.max_threads);
  plans.last_images = g.n % plans.images;
  if (plans.last_images) plans.last = Gemm::plan(shape_of(plans.last_images), ctx.max_threads);
  if (ctx.notes) {
    for (const Gemm* gemm : {&plans.full, &plans.last}) {
      if (gemm == &plans.last && !plans.last_images) continue;
      const GemmChoice& c = gemm->choice();
      ctx.notes->push_back(ctx.op.name + ": sgemm " + gemm->shape().to_string() + " -> " + c.arch + ", " +
                           std::to_string(c.threads) + " thread(s), " + std::to_string(static_cast<int>(c.gflops)) +
                           " GFLOP/s (" + c.source + "), " +
                           std::to_string(gemm == &plans.full ? plans.images : plans.last_images) +
                           " image(s) per GEMM");
    }
  }
  return plans;
}

// Runs body(n0, images, gemm) over the chunks of images in order.
template <class Body>
void for_each_chunk(const Geometry& g, const ChunkGemms& plans, Body body) {
  for (int64_t n0 = 0; n0 < g.n; n0 += plans.images) {
    const int64_t images = std::min(plans.images, g.n - n0);
    body(n0, images, images == plans.images ? plans.full : plans.last);
  }
}

// --- conv2d ----------------------------------------------------------------------------

ir::AttrSpec stride_spec() { return {"stride", ir::AttrKind::Ints, ir::AttrValue{std::vector<int64_t>{1, 1}}}; }
ir::AttrSpec padding_spec() { return {"padding", ir::AttrKind::Ints, ir::AttrValue{std::vector<int64_t>{0, 0}}}; }

void expect_rank4(const ir::InferContext& ctx, size_t i, const char* what) {
  if (ctx.rank(i) != 4) {
    ctx.fail(ErrorCode::ShapeMismatch, std::string(what) + " must have rank 4, got " + ir::shape_string(ctx.shape(i)));
  }
}

ir::InferResult infer_conv(const ir::InferContext& ctx) {
  for (size_t i = 0; i < ctx.inputs.size(); ++i) ctx.expect_dtype(i, DType::Float32);
  expect_rank4(ctx, 0, "x [N,C,H,W]");
  expect_rank4(ctx, 1, "w [F,C,KH,KW]");
  const ir::Shape &x = ctx.shape(0), &w = ctx.shape(1);
  if (x[1] != w[1]) {
    ctx.fail(ErrorCode::ShapeMismatch, "x has " + std::to_string(x[1]) + " channels but w expects " +
                                           std::to_string(w[1]) + " (x [N,C,H,W], w [F,C,KH,KW])");
  }
  if (ctx.inputs.size() == 3 && ctx.shape(2) != ir::Shape{w[0]}) {
    ctx.fail(ErrorCode::ShapeMismatch, "b must be [F] = [" + std::to_string(w[0]) + "], got " +
                                           ir::shape_string(ctx.shape(2)));
  }
  const Geometry g = geometry(x, w, ctx.attrs, &ctx);
  ir::InferResult r{{{DType::Float32, out_shape(g)}}};
  r.scratch_bytes = static_cast<size_t>(g.scratch_floats()) * sizeof(float);
  return r;
}

ir::Kernel conv_kernel(const ir::KernelContext& ctx) {
  const Geometry g = geometry(ctx.inputs[0]->shape, ctx.inputs[1]->shape, ctx.op.attrs, nullptr);
  const ChunkGemms plans =
      plan_chunks(ctx, g, [&](int64_t images) { return GemmShape{g.f, images * g.p(), g.k(), false, false}; });
  // A 1x1 kernel with stride 1 and no padding reads x as it is: col = x's [C, H*W].
  const bool identity_col = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
  auto* col = reinterpret_cast<float*>(ctx.scratch);
  float* buf = col + g.k() * plans.images * g.p();  // [F, G*P] when G > 1
  const float* b = ctx.inputs.size() == 3 ? ctx.input<float>(2) : nullptr;
  return [g, plans, identity_col, col, buf, x = ctx.input<float>(0), w = ctx.input<float>(1), b,
          y = ctx.output<float>(0)] {
    for_each_chunk(g, plans, [&](int64_t n0, int64_t images, const Gemm& gemm) {
      const float* xn = x + n0 * g.image();
      float* yn = y + n0 * g.out_image();
      if (images == 1) {
        const float* c = xn;
        if (!identity_col) {
          im2col(g, xn, col, g.p());
          c = col;
        }
        gemm.run(w, c, yn, 1.0f, 0.0f);
        if (b) {
          for (int64_t f = 0; f < g.f; ++f) {
            float* row = yn + f * g.p();
            for (int64_t q = 0; q < g.p(); ++q) row[q] += b[f];
          }
        }
        return;
      }
      for (int64_t i = 0; i < images; ++i) im2col(g, xn + i * g.image(), col + i * g.p(), images * g.p());
      gemm.run(w, col, buf, 1.0f, 0.0f);
      scatter_images(g, buf, images, b, yn);
    });
  };
}

ir::Attributes conv_attrs(const ir::Attributes& forward, const char* shape_name, const ir::Shape& shape) {
  ir::Attributes a;
  a.set("stride", forward.get_ints("stride"));
  a.set("padding", forward.get_ints("padding"));
  a.set(shape_name, std::vector<int64_t>(shape.begin(), shape.end()));
  return a;
}

std::vector<TensorId> conv_grad(ir::GradContext& ctx) {
  const ir::Op& op = ctx.op;
  const TensorId x = op.inputs[0], w = op.inputs[1], dy = ctx.output_grads[0];
  std::vector<TensorId> grads(op.inputs.size(), ir::kNoTensor);
  if (ctx.needs_grad[0]) grads[0] = ctx.add("conv2d_grad_input", {dy, w}, conv_attrs(op.attrs, "input_shape", ctx.shape(x)));
  if (ctx.needs_grad[1]) {
    grads[1] = ctx.add("conv2d_grad_weight", {x, dy}, conv_attrs(op.attrs, "weight_shape", ctx.shape(w)));
  }
  if (op.inputs.size() == 3 && ctx.needs_grad[2]) {
    ir::Attributes axes;
    axes.set("axes", std::vector<int64_t>{0, 2, 3});
    grads[2] = ctx.add("reduce_sum", {dy}, axes);
  }
  return grads;
}

// --- gradient ops ------------------------------------------------------------------------

// A 4-int shape attribute of a gradient op, every dim >= 1.
ir::Shape shape_attr(const ir::InferContext& ctx, const char* name) {
  const std::vector<int64_t>& s = ctx.attrs.get_ints(name);
  if (s.size() != 4 || std::any_of(s.begin(), s.end(), [](int64_t d) { return d < 1; })) {
    ctx.fail(ErrorCode::InvalidArgument, std::string(name) + " " + ir::shape_string(s) + " must hold 4 dims >= 1");
  }
  return s;
}

void expect_dy(const ir::InferContext& ctx, size_t i, const Geometry& g) {
  if (ctx.shape(i) != out_shape(g)) {
    ctx.fail(ErrorCode::ShapeMismatch, "dy must be the conv2d output [N,F,OH,OW] = " +
                                           ir::shape_string(out_shape(g)) + " for " + g.to_string());
  }
}

ir::InferResult infer_grad_input(const ir::InferContext& ctx) {
  ctx.expect_dtype(0, DType::Float32);
  ctx.expect_dtype(1, DType::Float32);
  expect_rank4(ctx, 0, "dy [N,F,OH,OW]");
  expect_rank4(ctx, 1, "w [F,C,KH,KW]");
  const ir::Shape x = shape_attr(ctx, "input_shape");
  if (x[1] != ctx.shape(1)[1]) ctx.fail(ErrorCode::ShapeMismatch, "input_shape and w have different channel counts");
  const Geometry g = geometry(x, ctx.shape(1), ctx.attrs, &ctx);
  expect_dy(ctx, 0, g);
  ir::InferResult r{{{DType::Float32, x}}};
  r.scratch_bytes = static_cast<size_t>(g.scratch_floats()) * sizeof(float);
  return r;
}

ir::Kernel grad_input_kernel(const ir::KernelContext& ctx) {
  const Geometry g = geometry(ctx.outputs[0]->shape, ctx.inputs[1]->shape, ctx.op.attrs, nullptr);
  const ChunkGemms plans =
      plan_chunks(ctx, g, [&](int64_t images) { return GemmShape{g.k(), images * g.p(), g.f, true, false}; });
  auto* dcol = reinterpret_cast<float*>(ctx.scratch);
  float* buf = dcol + g.k() * plans.images * g.p();
  return [g, plans, dcol, buf, dy = ctx.input<float>(0), w = ctx.input<float>(1), dx = ctx.output<float>(0)] {
    std::fill(dx, dx + g.n * g.image(), 0.0f);
    for_each_chunk(g, plans, [&](int64_t n0, int64_t images, const Gemm& gemm) {
      const float* dyn = dy + n0 * g.out_image();
      if (images > 1) {
        gather_images(g, dyn, images, buf);
        dyn = buf;
      }
      gemm.run(w, dyn, dcol, 1.0f, 0.0f);
      for (int64_t i = 0; i < images; ++i) col2im(g, dcol + i * g.p(), images * g.p(), dx + (n0 + i) * g.image());
    });
  };
}

ir::InferResult infer_grad_weight(const ir::InferContext& ctx) {
  ctx.expect_dtype(0, DType::Float32);
  ctx.expect_dtype(1, DType::Float32);
  expect_rank4(ctx, 0, "x [N,C,H,W]");
  expect_rank4(ctx, 1, "dy [N,F,OH,OW]");
  const ir::Shape w = shape_attr(ctx, "weight_shape");
  if (w[1] != ctx.shape(0)[1]) ctx.fail(ErrorCode::ShapeMismatch, "weight_shape and x have different channel counts");
  const Geometry g = geometry(ctx.shape(0), w, ctx.attrs, &ctx);
  expect_dy(ctx, 1, g);
  ir::InferResult r{{{DType::Float32, w}}};
  r.scratch_bytes = static_cast<size_t>(g.scratch_floats()) * sizeof(float);
  return r;
}

ir::Kernel grad_weight_kernel(const ir::KernelContext& ctx) {
  const Geometry g = geometry(ctx.inputs[0]->shape, ctx.outputs[0]->shape, ctx.op.attrs, nullptr);
  const ChunkGemms plans =
      plan_chunks(ctx, g, [&](int64_t images) { return GemmShape{g.f, g.k(), images * g.p(), false, true}; });
  auto* col = reinterpret_cast<float*>(ctx.scratch);
  float* buf = col + g.k() * plans.images * g.p();
  return [g, plans, col, buf, x = ctx.input<float>(0), dy = ctx.input<float>(1), dw = ctx.output<float>(0)] {
    for_each_chunk(g, plans, [&](int64_t n0, int64_t images, const Gemm& gemm) {
      const float* dyn = dy + n0 * g.out_image();
      if (images > 1) {
        gather_images(g, dyn, images, buf);
        dyn = buf;
      }
      for (int64_t i = 0; i < images; ++i) im2col(g, x + (n0 + i) * g.image(), col + i * g.p(), images * g.p());
      gemm.run(dyn, col, dw, 1.0f, n0 == 0 ? 0.0f : 1.0f);
    });
  };
}

ir::OpDef conv_def() {
  ir::OpDef d;
  d.name = "conv2d";
  d.min_inputs = 2;
  d.max_inputs = 3;
  d.attrs = {stride_spec(), padding_spec()};
  d.infer = infer_conv;
  d.kernel = conv_kernel;
  d.grad = conv_grad;
  return d;
}

ir::OpDef grad_input_def() {
  ir::OpDef d;
  d.name = "conv2d_grad_input";
  d.min_inputs = d.max_inputs = 2;
  d.attrs = {stride_spec(), padding_spec(), {"input_shape", ir::AttrKind::Ints, std::nullopt}};
  d.infer = infer_grad_input;
  d.kernel = grad_input_kernel;
  return d;
}

ir::OpDef grad_weight_def() {
  ir::OpDef d;
  d.name = "conv2d_grad_weight";
  d.min_inputs = d.max_inputs = 2;
  d.attrs = {stride_spec(), padding_spec(), {"weight_shape", ir::AttrKind::Ints, std::nullopt}};
  d.infer = infer_grad_weight;
  d.kernel = grad_weight_kernel;
  return d;
}

const ir::OpRegistration conv_op{conv_def()};
const ir::OpRegistration conv_grad_input_op{grad_input_def()};
const ir::OpRegistration conv_grad_weight_op{grad_weight_def()};

}  // namespace

}  // namespace plexus::ops
