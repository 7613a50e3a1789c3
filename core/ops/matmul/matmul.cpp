// matmul: Y[M,N] = op(A) @ op(B) for float32 rank-2 inputs, op = transpose when the
// attribute transpose_a / transpose_b is 1; float16 inputs and output computed in float32
// (common/float32_compute.h). Runs on BLIS with the kernel set chosen for
// the shape when the session is created (gemm.h); shape rule, plan and gradient formulas
// are shared with batch_matmul (matrix_product.h).
#include "core/ir/graph.h"
#include "core/ops/op_def.h"
#include "core/ops/common/float32_compute.h"
#include "core/ops/matmul/matrix_product.h"

namespace plexus::ops {

namespace {

using ir::DType;
using ir::ErrorCode;
using ir::TensorId;

ir::InferResult infer(const ir::InferContext& ctx) {
  const DType dtype = expect_float_inputs(ctx, 2);
  if (ctx.rank(0) != 2 || ctx.rank(1) != 2) ctx.fail(ErrorCode::ShapeMismatch, "both inputs must have rank 2");
  const GemmShape s = infer_matrix_product(ctx);
  return {{{dtype, {s.m, s.n}}}};
}

Kernel kernel(const KernelContext& ctx) {
  if (has_float16(ctx)) return compute_in_float32(ctx, kernel);
  const Gemm gemm = plan_gemm(ctx, matrix_gemm_shape(ctx.inputs[0]->shape, ctx.inputs[1]->shape,
                                                     transpose_a(ctx.op.attrs), transpose_b(ctx.op.attrs)));
  return [gemm, a = ctx.input<float>(0), b = ctx.input<float>(1), y = ctx.output<float>(0)] {
    gemm.run(a, b, y, 1.0f, 0.0f);
  };
}

std::vector<TensorId> grad(ir::GradContext& ctx) {
  const auto [da, db] = matrix_product_grads(ctx, "matmul", ctx.op.inputs[0], ctx.op.inputs[1], ctx.output_grads[0],
                                             ctx.needs_grad[0], ctx.needs_grad[1]);
  return {da, db};
}

OpDef def() {
  OpDef d;
  d.name = "matmul";
  d.min_inputs = d.max_inputs = 2;
  d.attrs = transpose_attr_specs();
  d.infer = infer;
  d.kernel = kernel;
  d.scratch = with_float32_copies(nullptr);
  d.grad = grad;
  return d;
}

const OpRegistration registration{def()};

}  // namespace

}  // namespace plexus::ops
