// 2-D convolution (PyTorch's Conv2d: cross-correlation, zero padding, no dilation or groups)
// and its gradient ops:
//   conv2d(x [N,C,H,W], w [F,C,KH,KW] [, b [F]]; stride, padding) -> y [N,F,OH,OW]
//     OH = (H + 2*ph - KH) / sh + 1, OW likewise (floor division)
//   conv2d_grad_input(dy [N,F,OH,OW], w; stride, padding, input_shape) -> dx [N,C,H,W]
//   conv2d_grad_weight(x, dy; stride, padding, weight_shape) -> dw [F,C,KH,KW]
// and db = reduce_sum(dy, axes {0,2,3}). All of float32, or all of float16 computed in
// float32 (common/float32_compute.h).
//
// The kernels (conv_gemm.h) run im2col / col2im one image at a time and BLIS's small-GEMM
// kernels on it; they need scratch (KernelDef::scratch) for one image's column
// matrix (a few images' for grad_weight). Results do not depend on the thread count or on
// timing: every kernel runs on the device thread in a fixed order.
#include <algorithm>
#include <string>

#include "core/ir/graph.h"
#include "core/ops/op_def.h"
#include "core/ops/common/float32_compute.h"
#include "core/ops/conv/conv_gemm.h"
#include "core/ops/common/relu_fused.h"
#include "core/ops/common/window_attrs.h"

namespace plexus::ops {

namespace {

using ir::DType;
using ir::ErrorCode;
using ir::TensorId;

using Geometry = ConvGeometry;

std::string attrs_string(const Geometry& g) {
  return "stride [" + std::to_string(g.sh) + "," + std::to_string(g.sw) + "], padding [" + std::to_string(g.ph) + "," +
         std::to_string(g.pw) + "]";
}

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

// The plan of the op's kernel, reported in the session's notes.
ConvPlan plan(const KernelContext& ctx, const Geometry& g, ConvPass pass) {
  ConvPlan p(g, pass);
  if (ctx.notes) ctx.notes->push_back(ctx.op.name + ": " + p.description());
  return p;
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
  const DType dtype = expect_float_inputs(ctx, ctx.inputs.size());
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
  return {{{dtype, out_shape(geometry(x, w, ctx.attrs, &ctx))}}};
}

/// The scratch of `pass`'s kernel for input x and weight w (ConvPlan::scratch_bytes).
size_t plan_scratch(const ir::InferContext& ctx, const ir::Shape& x, const ir::Shape& w, ConvPass pass) {
  return static_cast<size_t>(ConvPlan(geometry(x, w, ctx.attrs, &ctx), pass).scratch_bytes());
}

size_t conv_scratch(const ir::InferContext& ctx) { return plan_scratch(ctx, ctx.shape(0), ctx.shape(1), ConvPass::Forward); }

/// conv2d's kernel, with relu applied to y when `relu` (conv2d_relu).
Kernel conv_forward(const KernelContext& ctx, bool relu) {
  if (has_float16(ctx)) {
    return compute_in_float32(ctx, [relu](const KernelContext& c) { return conv_forward(c, relu); });
  }
  const Geometry g = geometry(ctx.inputs[0]->shape, ctx.inputs[1]->shape, ctx.op.attrs, nullptr);
  const float* b = ctx.inputs.size() == 3 ? ctx.input<float>(2) : nullptr;
  return [p = plan(ctx, g, ConvPass::Forward), b, scratch = reinterpret_cast<float*>(ctx.scratch),
          x = ctx.input<float>(0), w = ctx.input<float>(1), y = ctx.output<float>(0), relu] {
    p.forward(x, w, b, y, scratch, relu);
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
                                           ir::shape_string(out_shape(g)) + " for " + attrs_string(g));
  }
}

ir::InferResult infer_grad_input(const ir::InferContext& ctx) {
  const DType dtype = expect_float_inputs(ctx, 2);
  expect_rank4(ctx, 0, "dy [N,F,OH,OW]");
  expect_rank4(ctx, 1, "w [F,C,KH,KW]");
  const ir::Shape x = shape_attr(ctx, "input_shape");
  if (x[1] != ctx.shape(1)[1]) ctx.fail(ErrorCode::ShapeMismatch, "input_shape and w have different channel counts");
  const Geometry g = geometry(x, ctx.shape(1), ctx.attrs, &ctx);
  expect_dy(ctx, 0, g);
  return {{{dtype, x}}};
}

size_t grad_input_scratch(const ir::InferContext& ctx) {
  return plan_scratch(ctx, ctx.attrs.get_ints("input_shape"), ctx.shape(1), ConvPass::GradInput);
}

Kernel grad_input_kernel(const KernelContext& ctx) {
  if (has_float16(ctx)) return compute_in_float32(ctx, grad_input_kernel);
  const Geometry g = geometry(ctx.outputs[0]->shape, ctx.inputs[1]->shape, ctx.op.attrs, nullptr);
  return [p = plan(ctx, g, ConvPass::GradInput), scratch = reinterpret_cast<float*>(ctx.scratch),
          dy = ctx.input<float>(0), w = ctx.input<float>(1), dx = ctx.output<float>(0)] {
    p.grad_input(dy, w, dx, scratch);
  };
}

ir::InferResult infer_grad_weight(const ir::InferContext& ctx) {
  const DType dtype = expect_float_inputs(ctx, 2);
  expect_rank4(ctx, 0, "x [N,C,H,W]");
  expect_rank4(ctx, 1, "dy [N,F,OH,OW]");
  const ir::Shape w = shape_attr(ctx, "weight_shape");
  if (w[1] != ctx.shape(0)[1]) ctx.fail(ErrorCode::ShapeMismatch, "weight_shape and x have different channel counts");
  const Geometry g = geometry(ctx.shape(0), w, ctx.attrs, &ctx);
  expect_dy(ctx, 1, g);
  return {{{dtype, w}}};
}

size_t grad_weight_scratch(const ir::InferContext& ctx) {
  return plan_scratch(ctx, ctx.shape(0), ctx.attrs.get_ints("weight_shape"), ConvPass::GradWeight);
}

Kernel grad_weight_kernel(const KernelContext& ctx) {
  if (has_float16(ctx)) return compute_in_float32(ctx, grad_weight_kernel);
  const Geometry g = geometry(ctx.inputs[0]->shape, ctx.outputs[0]->shape, ctx.op.attrs, nullptr);
  return [p = plan(ctx, g, ConvPass::GradWeight), scratch = reinterpret_cast<float*>(ctx.scratch),
          x = ctx.input<float>(0), dy = ctx.input<float>(1), dw = ctx.output<float>(0)] {
    p.grad_weight(x, dy, dw, scratch);
  };
}

OpDef conv_def() {
  OpDef d;
  d.name = "conv2d";
  d.min_inputs = 2;
  d.max_inputs = 3;
  d.attrs = {stride_spec(), padding_spec()};
  d.infer = infer_conv;
  d.kernel = [](const KernelContext& ctx) { return conv_forward(ctx, false); };
  d.scratch = with_float32_copies(conv_scratch);
  d.grad = conv_grad;
  return d;
}

OpDef grad_input_def() {
  OpDef d;
  d.name = "conv2d_grad_input";
  d.min_inputs = d.max_inputs = 2;
  d.attrs = {stride_spec(), padding_spec(), {"input_shape", ir::AttrKind::Ints, std::nullopt}};
  d.infer = infer_grad_input;
  d.kernel = grad_input_kernel;
  d.scratch = with_float32_copies(grad_input_scratch);
  return d;
}

OpDef grad_weight_def() {
  OpDef d;
  d.name = "conv2d_grad_weight";
  d.min_inputs = d.max_inputs = 2;
  d.attrs = {stride_spec(), padding_spec(), {"weight_shape", ir::AttrKind::Ints, std::nullopt}};
  d.infer = infer_grad_weight;
  d.kernel = grad_weight_kernel;
  d.scratch = with_float32_copies(grad_weight_scratch);
  return d;
}

const OpRegistration conv_op{conv_def()};
const OpRegistration conv_relu_op{
    relu_fused_def(conv_def(), [](const KernelContext& ctx) { return conv_forward(ctx, true); })};
const OpRegistration conv_grad_input_op{grad_input_def()};
const OpRegistration conv_grad_weight_op{grad_weight_def()};

}  // namespace

ConvGeometry conv_geometry(const ir::Shape& x, const ir::Shape& w, const ir::Attributes& attrs) {
  return geometry(x, w, attrs, nullptr);
}

}  // namespace plexus::ops
