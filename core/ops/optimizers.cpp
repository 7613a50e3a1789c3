// Weight-update ops, applied in place to variables.
//   scaled_add_(x, y; a=1, b=1):  x <- a*x + b*y   (PopXL ops.scaled_add_; SGD is
//   scaled_add_(w, grad, b=-lr), seed 000's update_weights_bias). Output 0 is x itself.
#include "core/ir/graph.h"

namespace plexus::ops {

namespace {

using ir::DType;

ir::OpDef scaled_add_def() {
  ir::OpDef d;
  d.name = "scaled_add_";
  d.min_inputs = d.max_inputs = 2;
  d.attrs = {{"a", ir::AttrKind::Float, ir::AttrValue{1.0}}, {"b", ir::AttrKind::Float, ir::AttrValue{1.0}}};
  d.inplace_input = 0;
  d.infer = [](const ir::InferContext& ctx) {
    ctx.expect_dtype(0, DType::Float32);
    ctx.expect_dtype(1, DType::Float32);
    if (ctx.shape(0) != ctx.shape(1)) ctx.fail(ir::ErrorCode::ShapeMismatch, "x and y must have the same shape");
    return ir::InferResult{{{DType::Float32, ctx.shape(0)}}};
  };
  d.kernel = [](const ir::KernelContext& ctx) -> ir::Kernel {
    const auto a = static_cast<float>(ctx.op.attrs.get_float("a"));
    const auto b = static_cast<float>(ctx.op.attrs.get_float("b"));
    return [x = ctx.output<float>(0), y = ctx.input<float>(1), n = ir::numel(ctx.outputs[0]->shape), a, b] {
      if (a == 1.0f) {
        for (int64_t i = 0; i < n; ++i) x[i] += b * y[i];
      } else {
        for (int64_t i = 0; i < n; ++i) x[i] = a * x[i] + b * y[i];
      }
    };
  };
  return d;
}

const ir::OpRegistration scaled_add_op{scaled_add_def()};

}  // namespace

}  // namespace plexus::ops
