// Layer normalisation over the last axis (PyTorch's nn.LayerNorm(C, eps) and
// F.layer_norm(x, [C], weight, bias, eps)):
//   layer_norm(x, [weight, bias]; eps) = (x - mean) / sqrt(var + eps) * weight + bias
// x float32 [..., C] (rank >= 1); weight and bias float32 [C], both or neither (1 or 3
// inputs; without them weight = 1, bias = 0). mean and the biased variance (sum / C, as
// PyTorch) are over the last axis of each row. `eps` float (1e-5, PyTorch's default), >= 0.
// Output: float32 of x's shape.
//
// Gradient op layer_norm_grad(x, dy, [weight]; eps) -> dx [, dweight, dbias] (no gradient
// of its own): with xhat = (x - mean) * rstd, rstd = 1 / sqrt(var + eps), g = dy * weight,
//   dx      = rstd * (g - mean(g) - xhat * mean(g * xhat))   per row
//   dweight = sum over rows of dy * xhat,   dbias = sum over rows of dy
// Design: one fused grad op with a dweight/dbias output pair when the forward had weight and
// bias, which recomputes mean and rstd from x rather than have the forward emit them as
// extra outputs: the forward keeps PyTorch's one-output signature, no [rows] statistics stay
// alive from the forward pass to the backward one, and recomputing costs one more pass over
// a row the kernel reads anyway. dweight and dbias come out of the same pass as dx, where
// reduce_sum / mul ops would materialise xhat as a tensor of x's size.
// Row statistics accumulate in double: when |mean| >> std (an offset of 1000 on O(1) data)
// float sums would lose the digits that the normalisation then scales up by rstd.
#include <algorithm>
#include <cmath>
#include <string>

#include "core/ir/graph.h"
#include "core/ops/op_def.h"
#include "core/ops/common/number_format.h"

namespace plexus::ops {

namespace {

using ir::DType;
using ir::ErrorCode;
using ir::TensorId;

struct RowStats {
  double mean;
  double rstd;
};

RowStats row_stats(const float* x, int64_t c, double eps) {
  double sum = 0.0;
  for (int64_t j = 0; j < c; ++j) sum += x[j];
  const double mean = sum / static_cast<double>(c);
  double squares = 0.0;
  for (int64_t j = 0; j < c; ++j) squares += (x[j] - mean) * (x[j] - mean);
  return {mean, 1.0 / std::sqrt(squares / static_cast<double>(c) + eps)};
}

// Rows and their length C of a tensor normalised over its last axis.
struct Rows {
  int64_t count;
  int64_t c;
};

Rows rows_of(const ir::Shape& shape) {
  const int64_t c = shape.back();
  return {ir::numel(shape) / c, c};
}

// Input `i` (weight or bias) must be float32 [C].
void check_per_channel(const ir::InferContext& ctx, size_t i, const char* what) {
  ctx.expect_dtype(i, DType::Float32);
  const int64_t c = ctx.shape(0).back();
  if (ctx.shape(i) != ir::Shape{c}) {
    ctx.fail(ErrorCode::ShapeMismatch, std::string(what) + " must be [C] = [" + std::to_string(c) +
                                           "], C being the last dim of x, not " + ir::shape_string(ctx.shape(i)));
  }
}

// x float32 of rank >= 1 and a valid eps.
void check_x_and_eps(const ir::InferContext& ctx) {
  ctx.expect_dtype(0, DType::Float32);
  if (ctx.rank(0) == 0) {
    ctx.fail(ErrorCode::ShapeMismatch, "x must have rank >= 1 (it is normalised over its last dim)");
  }
  const double eps = ctx.attrs.get_float("eps");
  if (!(eps >= 0.0 && std::isfinite(eps))) {
    ctx.fail(ErrorCode::InvalidArgument, "eps is " + number(eps) + ", must be finite and >= 0");
  }
}

ir::InferResult infer_forward(const ir::InferContext& ctx) {
  check_x_and_eps(ctx);
  if (ctx.inputs.size() == 2) {
    ctx.fail(ErrorCode::InvalidArgument, "weight and bias come together: give x alone or x, weight and bias");
  }
  if (ctx.inputs.size() == 3) {
    check_per_channel(ctx, 1, "weight");
    check_per_channel(ctx, 2, "bias");
  }
  return {{{DType::Float32, ctx.shape(0)}}};
}

// (x, dy, [weight]) -> dx [, dweight, dbias]
ir::InferResult infer_grad(const ir::InferContext& ctx) {
  check_x_and_eps(ctx);
  ctx.expect_dtype(1, DType::Float32);
  if (ctx.shape(1) != ctx.shape(0)) ctx.fail(ErrorCode::ShapeMismatch, "x and dy must have the same shape");
  ir::InferResult result{{{DType::Float32, ctx.shape(0)}}};
  if (ctx.inputs.size() == 3) {
    check_per_channel(ctx, 2, "weight");
    result.outputs.push_back({DType::Float32, ctx.shape(2)});
    result.outputs.push_back({DType::Float32, ctx.shape(2)});
  }
  return result;
}

Kernel forward_kernel(const KernelContext& ctx) {
  const bool affine = ctx.inputs.size() == 3;
  return [x = ctx.input<float>(0), w = affine ? ctx.input<float>(1) : nullptr,
          b = affine ? ctx.input<float>(2) : nullptr, y = ctx.output<float>(0),
          rows = rows_of(ctx.inputs[0]->shape), eps = ctx.op.attrs.get_float("eps")] {
    for (int64_t r = 0; r < rows.count; ++r) {
      const float* xr = x + r * rows.c;
      float* yr = y + r * rows.c;
      const RowStats s = row_stats(xr, rows.c, eps);
      for (int64_t j = 0; j < rows.c; ++j) {
        const auto xhat = static_cast<float>((xr[j] - s.mean) * s.rstd);
        yr[j] = w ? xhat * w[j] + b[j] : xhat;
      }
    }
  };
}

// One row of the gradient: dx, and dy * xhat and dy added into dw and db when given.
void grad_row(const float* x, const float* dy, const float* w, float* dx, float* dw, float* db, int64_t c,
              double eps) {
  const RowStats s = row_stats(x, c, eps);
  double sum_g = 0.0, sum_g_xhat = 0.0;
  for (int64_t j = 0; j < c; ++j) {
    const double xhat = (x[j] - s.mean) * s.rstd;
    const double g = w ? static_cast<double>(dy[j]) * w[j] : dy[j];
    sum_g += g;
    sum_g_xhat += g * xhat;
    if (dw) {
      dw[j] += static_cast<float>(dy[j] * xhat);
      db[j] += dy[j];
    }
  }
  const double mean_g = sum_g / static_cast<double>(c), mean_g_xhat = sum_g_xhat / static_cast<double>(c);
  for (int64_t j = 0; j < c; ++j) {
    const double xhat = (x[j] - s.mean) * s.rstd;
    const double g = w ? static_cast<double>(dy[j]) * w[j] : dy[j];
    dx[j] = static_cast<float>(s.rstd * (g - mean_g - xhat * mean_g_xhat));
  }
}

Kernel grad_kernel(const KernelContext& ctx) {
  const bool affine = ctx.inputs.size() == 3;
  return [x = ctx.input<float>(0), dy = ctx.input<float>(1), w = affine ? ctx.input<float>(2) : nullptr,
          dx = ctx.output<float>(0), dw = affine ? ctx.output<float>(1) : nullptr,
          db = affine ? ctx.output<float>(2) : nullptr, rows = rows_of(ctx.inputs[0]->shape),
          eps = ctx.op.attrs.get_float("eps")] {
    if (dw) {
      std::fill(dw, dw + rows.c, 0.0f);
      std::fill(db, db + rows.c, 0.0f);
    }
    for (int64_t r = 0; r < rows.count; ++r) {
      const int64_t at = r * rows.c;
      grad_row(x + at, dy + at, w, dx + at, dw, db, rows.c, eps);
    }
  };
}

const std::vector<ir::AttrSpec> kEpsAttr = {{"eps", ir::AttrKind::Float, ir::AttrValue{1e-5}}};

OpDef forward_def() {
  OpDef d;
  d.name = "layer_norm";
  d.min_inputs = 1;
  d.max_inputs = 3;
  d.attrs = kEpsAttr;
  d.infer = infer_forward;
  d.kernel = forward_kernel;
  d.grad = [](ir::GradContext& ctx) {
    std::vector<TensorId> inputs = {ctx.op.inputs[0], ctx.output_grads[0]};
    if (ctx.op.inputs.size() == 3) inputs.push_back(ctx.op.inputs[1]);
    // (dx) or (dx, dweight, dbias): one gradient per input of the forward op.
    return ctx.graph.add_op("layer_norm_grad", inputs, ctx.op.attrs);
  };
  return d;
}

OpDef grad_def() {
  OpDef d;
  d.name = "layer_norm_grad";
  d.min_inputs = 2;
  d.max_inputs = 3;
  d.attrs = kEpsAttr;
  d.infer = infer_grad;
  d.kernel = grad_kernel;
  return d;
}

const OpRegistration layer_norm_op{forward_def()};
const OpRegistration layer_norm_grad_op{grad_def()};

}  // namespace

}  // namespace plexus::ops
