// Softmax along one axis (PyTorch's torch.softmax / torch.log_softmax with dim=axis):
//   softmax(x; axis)     = exp(x - max) / sum(exp(x - max))        over the axis
//   log_softmax(x; axis) = (x - max) - log(sum(exp(x - max)))      over the axis
// x float32 of rank >= 1, any shape; the output has x's shape. `axis` int (default -1;
// negative counts from the end). Subtracting the line's max keeps exp from overflowing.
// Gradient ops, from the forward output y (no gradient of their own):
//   softmax_grad(y, dy; axis)     = y * (dy - sum(dy * y, axis))
//   log_softmax_grad(y, dy; axis) = dy - exp(y) * sum(dy, axis)
// Lines along the last axis are contiguous loops; any other axis is walked with its stride.
#include <algorithm>
#include <cmath>

#include "core/ir/graph.h"
#include "core/ops/op_def.h"
#include "core/ops/reduction/axis.h"

namespace plexus::ops {

namespace {

using ir::DType;
using ir::TensorId;

template <class Stride>
float line_max(const float* x, int64_t len, Stride stride) {
  float m = x[0];
  for (int64_t k = 1; k < len; ++k) m = std::max(m, x[k * stride]);
  return m;
}

template <bool Log, class Stride>
void forward_line(const float* x, float* y, int64_t len, Stride stride) {
  const float m = line_max(x, len, stride);
  float sum = 0.0f;
  if constexpr (Log) {
    for (int64_t k = 0; k < len; ++k) sum += std::exp(x[k * stride] - m);
    const float log_sum = std::log(sum);
    for (int64_t k = 0; k < len; ++k) y[k * stride] = (x[k * stride] - m) - log_sum;  // x - m is exact for close values
  } else {
    for (int64_t k = 0; k < len; ++k) {
      const float e = std::exp(x[k * stride] - m);
      y[k * stride] = e;
      sum += e;
    }
    const float inv = 1.0f / sum;
    for (int64_t k = 0; k < len; ++k) y[k * stride] *= inv;
  }
}

template <bool Log, class Stride>
void grad_line(const float* y, const float* dy, float* dx, int64_t len, Stride stride) {
  float sum = 0.0f;
  if constexpr (Log) {
    for (int64_t k = 0; k < len; ++k) sum += dy[k * stride];
    for (int64_t k = 0; k < len; ++k) dx[k * stride] = dy[k * stride] - std::exp(y[k * stride]) * sum;
  } else {
    for (int64_t k = 0; k < len; ++k) sum += dy[k * stride] * y[k * stride];
    for (int64_t k = 0; k < len; ++k) dx[k * stride] = y[k * stride] * (dy[k * stride] - sum);
  }
}

int64_t op_axis(const KernelContext& ctx) {
  return ir::normalize_axis(ctx.op.attrs.get_int("axis"), ctx.inputs[0]->shape.size());
}

// Runs line(start, len, stride) over every line of input 0 along the op's axis.
template <class Line>
Kernel along_axis(const KernelContext& ctx, Line line) {
  return [split = split_at_axis(ctx.inputs[0]->shape, op_axis(ctx)), line] {
    for_each_line(split, [&](int64_t start, auto stride) { line(start, split.len, stride); });
  };
}

ir::InferResult infer_forward(const ir::InferContext& ctx) {
  ctx.expect_dtype(0, DType::Float32);
  checked_axis(ctx, ctx.attrs.get_int("axis"));
  return {{{DType::Float32, ctx.shape(0)}}};
}

// (y, dy) -> dx, float32 of one shape.
ir::InferResult infer_grad(const ir::InferContext& ctx) {
  ctx.expect_dtype(0, DType::Float32);
  ctx.expect_dtype(1, DType::Float32);
  if (ctx.shape(0) != ctx.shape(1)) ctx.fail(ir::ErrorCode::ShapeMismatch, "y and dy must have the same shape");
  checked_axis(ctx, ctx.attrs.get_int("axis"));
  return {{{DType::Float32, ctx.shape(0)}}};
}

const std::vector<ir::AttrSpec> kAxisAttr = {{"axis", ir::AttrKind::Int, ir::AttrValue{int64_t{-1}}}};

template <bool Log>
OpDef forward_def(const char* name, const char* grad_name) {
  OpDef d;
  d.name = name;
  d.attrs = kAxisAttr;
  d.infer = infer_forward;
  d.kernel = [](const KernelContext& ctx) {
    return along_axis(ctx, [x = ctx.input<float>(0), y = ctx.output<float>(0)](int64_t start, int64_t len,
                                                                                 auto stride) {
      forward_line<Log>(x + start, y + start, len, stride);
    });
  };
  d.grad = [grad_name](ir::GradContext& ctx) {
    return std::vector<TensorId>{ctx.add(grad_name, {ctx.op.outputs[0], ctx.output_grads[0]}, ctx.op.attrs)};
  };
  return d;
}

template <bool Log>
OpDef grad_def(const char* name) {
  OpDef d;
  d.name = name;
  d.min_inputs = d.max_inputs = 2;
  d.attrs = kAxisAttr;
  d.infer = infer_grad;
  d.kernel = [](const KernelContext& ctx) {
    return along_axis(ctx, [y = ctx.input<float>(0), dy = ctx.input<float>(1), dx = ctx.output<float>(0)](
                               int64_t start, int64_t len, auto stride) {
      grad_line<Log>(y + start, dy + start, dx + start, len, stride);
    });
  };
  return d;
}

const OpRegistration softmax_op{forward_def<false>("softmax", "softmax_grad")};
const OpRegistration softmax_grad_op{grad_def<false>("softmax_grad")};
const OpRegistration log_softmax_op{forward_def<true>("log_softmax", "log_softmax_grad")};
const OpRegistration log_softmax_grad_op{grad_def<true>("log_softmax_grad")};

}  // namespace

}  // namespace plexus::ops
