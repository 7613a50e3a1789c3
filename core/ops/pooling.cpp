// 2-D max pooling (PyTorch's MaxPool2d with dilation 1, ceil_mode False) and its gradient:
//   max_pool2d(x [N,C,H,W]; kernel, stride = kernel, padding = 0) -> [N,C,OH,OW]
//     OH = (H + 2*ph - KH) / sh + 1 (floor), OW likewise; padding <= kernel / 2 (as PyTorch)
//     y = the maximum over the window's positions inside the image (padding never wins).
//     Ties: the first maximum in row-major window order. NaN propagates: a NaN in the
//     window is the result (PyTorch's CPU kernel: `if (val > max || isnan(val))`).
//   max_pool2d_grad(x, dy; same attributes) -> dx [N,C,H,W]
//     dx = 0, then dy of every window added at its argmax (overlapping windows add up).
// The gradient op recomputes the argmax from x instead of saving indices as a second
// output: one more pass over x (cheap next to the convolutions around it) and no int
// tensor kept alive from the forward to the backward pass.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/ir/graph.h"
#include "core/ops/window_attrs.h"

namespace plexus::ops {

namespace {

using ir::DType;
using ir::ErrorCode;
using ir::TensorId;

struct Pool {
  int64_t nc = 0, h = 0, w = 0;  // N*C planes of H x W
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
  int64_t oh = 0, ow = 0;

  /// Row-major index in the plane of the window's first maximum (see the file comment).
  int64_t argmax(const float* plane, int64_t y, int64_t x) const {
    const int64_t h0 = y * sh - ph, w0 = x * sw - pw;
    const int64_t hs = std::max<int64_t>(h0, 0), he = std::min(h0 + kh, h);
    const int64_t ws = std::max<int64_t>(w0, 0), we = std::min(w0 + kw, w);
    int64_t best_index = hs * w + ws;
    float best = -std::numeric_limits<float>::infinity();
    for (int64_t r = hs; r < he; ++r) {
      const float* row = plane + r * w;
      for (int64_t c = ws; c < we; ++c) {
        const float v = row[c];
        if (v > best || std::isnan(v)) {
          best = v;
          best_index = r * w + c;
        }
      }
    }
    return best_index;
  }
};

// Reads the attributes for input shape x; `ctx` reports violations (else they are bugs).
Pool pool_geometry(const ir::Shape& x, const ir::Attributes& attrs, const ir::InferContext* ctx) {
  auto bad = [ctx](ErrorCode code, const std::string& rule) {
    if (ctx) ctx->fail(code, rule);
    ir::fail(ErrorCode::Internal, "max_pool2d: " + rule);
  };
  Pool p;
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

ir::Shape out_shape(const ir::Shape& x, const Pool& p) { return {x[0], x[1], p.oh, p.ow}; }

Pool check_x(const ir::InferContext& ctx) {
  ctx.expect_dtype(0, DType::Float32);
  if (ctx.rank(0) != 4) ctx.fail(ErrorCode::ShapeMismatch, "x must be [N,C,H,W] (rank 4)");
  return pool_geometry(ctx.shape(0), ctx.attrs, &ctx);
}

std::vector<ir::AttrSpec> pool_attrs() {
  return {{"kernel", ir::AttrKind::Ints, std::nullopt},
          {"stride", ir::AttrKind::Ints, ir::AttrValue{std::vector<int64_t>{}}},
          {"padding", ir::AttrKind::Ints, ir::AttrValue{std::vector<int64_t>{0, 0}}}};
}

ir::OpDef max_pool_def() {
  ir::OpDef d;
  d.name = "max_pool2d";
  d.attrs = pool_attrs();
  d.infer = [](const ir::InferContext& ctx) {
    const Pool p = check_x(ctx);
    return ir::InferResult{{{DType::Float32, out_shape(ctx.shape(0), p)}}};
  };
  d.kernel = [](const ir::KernelContext& ctx) -> ir::Kernel {
    const Pool p = pool_geometry(ctx.inputs[0]->shape, ctx.op.attrs, nullptr);
    return [p, x = ctx.input<float>(0), y = ctx.output<float>(0)] {
      for (int64_t plane = 0; plane < p.nc; ++plane) {
        const float* xp = x + plane * p.h * p.w;
        float* yp = y + plane * p.oh * p.ow;
        for (int64_t r = 0; r < p.oh; ++r) {
          for (int64_t c = 0; c < p.ow; ++c) yp[r * p.ow + c] = xp[p.argmax(xp, r, c)];
        }
      }
    };
  };
  d.grad = [](ir::GradContext& ctx) {
    return std::vector<TensorId>{ctx.add("max_pool2d_grad", {ctx.op.inputs[0], ctx.output_grads[0]}, ctx.op.attrs)};
  };
  return d;
}

ir::OpDef max_pool_grad_def() {
  ir::OpDef d;
  d.name = "max_pool2d_grad";
  d.min_inputs = d.max_inputs = 2;
  d.attrs = pool_attrs();
  d.infer = [](const ir::InferContext& ctx) {
    const Pool p = check_x(ctx);
    ctx.expect_dtype(1, DType::Float32);
    const ir::Shape y = out_shape(ctx.shape(0), p);
    if (ctx.shape(1) != y) {
      ctx.fail(ErrorCode::ShapeMismatch, "dy must be the max_pool2d output " + ir::shape_string(y));
    }
    return ir::InferResult{{{DType::Float32, ctx.shape(0)}}};
  };
  d.kernel = [](const ir::KernelContext& ctx) -> ir::Kernel {
    const Pool p = pool_geometry(ctx.inputs[0]->shape, ctx.op.attrs, nullptr);
    return [p, x = ctx.input<float>(0), dy = ctx.input<float>(1), dx = ctx.output<float>(0)] {
      std::fill(dx, dx + p.nc * p.h * p.w, 0.0f);
      for (int64_t plane = 0; plane < p.nc; ++plane) {
        const float* xp = x + plane * p.h * p.w;
        const float* dyp = dy + plane * p.oh * p.ow;
        float* dxp = dx + plane * p.h * p.w;
        for (int64_t r = 0; r < p.oh; ++r) {
          for (int64_t c = 0; c < p.ow; ++c) dxp[p.argmax(xp, r, c)] += dyp[r * p.ow + c];
        }
      }
    };
  };
  return d;
}

const ir::OpRegistration max_pool_op{max_pool_def()};
const ir::OpRegistration max_pool_grad_op{max_pool_grad_def()};

}  // namespace

}  // namespace plexus::ops
