// batch_matmul(a float32 [..., M, K], b float32 [..., K, N]) -> float32 [batch..., M, N]:
// a matrix product per batch entry, the leading (batch) dims broadcast by numpy rules
// (numpy.matmul / torch.matmul / ONNX MatMul for operands of rank >= 2). One operand must
// have rank >= 3 (two matrices are matmul); a rank-2 operand is one matrix used for every
// batch entry. transpose_a / transpose_b (int, 0) transpose the last two dims of a / b, as
// in matmul (the shape rule is then on op(A) [M,K] and op(B) [K,N]).
// Each entry runs through the GEMM planned for [M,K]x[K,N] (gemm.h); when b has a single
// matrix and a is not transposed, the whole batch is one GEMM of (batch*M) rows.
// Gradients: dA = dY op(B)^T, dB = op(A)^T dY per entry (matrix_product.h), summed over
// the dims along which the operand was broadcast; in the single-GEMM case dB is one matmul
// of A and dY flattened to (batch*M) rows, which sums over the batch inside the GEMM.
#include <span>

#include "core/ir/graph.h"
#include "core/ops/op_def.h"
#include "core/ops/common/grad_helpers.h"
#include "core/ops/common/float32_compute.h"
#include "core/ops/matmul/matrix_product.h"
#include "core/ops/common/strided_loop.h"

namespace plexus::ops {

namespace {

using ir::DType;
using ir::ErrorCode;
using ir::TensorId;

std::span<const int64_t> batch_dims(const ir::Shape& s) { return std::span(s).first(s.size() - 2); }

// b holds one matrix (no batch entries of its own) and a is not transposed: a's entries
// are contiguous rows of one [batch*M, K] matrix.
bool single_gemm(const ir::Shape& b, bool ta) { return !ta && ir::numel(batch_dims(b)) == 1; }

ir::InferResult infer(const ir::InferContext& ctx) {
  const GemmShape s = infer_matrix_product(ctx);
  if (ctx.rank(0) < 3 && ctx.rank(1) < 3) {
    ctx.fail(ErrorCode::ShapeMismatch, "one input must have rank >= 3 (a product of two matrices is matmul)");
  }
  ir::Shape out;
  if (!ir::broadcast_shapes(batch_dims(ctx.shape(0)), batch_dims(ctx.shape(1)), out)) {
    ctx.fail(ErrorCode::ShapeMismatch, "batch dims " + ir::shape_string(batch_dims(ctx.shape(0))) + " and " +
                                           ir::shape_string(batch_dims(ctx.shape(1))) +
                                           " are not broadcast-compatible (numpy rules)");
  }
  out.push_back(s.m);
  out.push_back(s.n);
  return {{{ctx.dtype(0), out}}};
}

// Offsets, in matrices, of a's and b's matrix for each batch entry of the output.
std::vector<std::pair<int64_t, int64_t>> entry_offsets(const ir::Shape& a, const ir::Shape& b, const ir::Shape& y) {
  const std::span<const int64_t> batch = batch_dims(y);
  const std::vector<int64_t> strides[2] = {broadcast_strides(batch_dims(a), batch),
                                           broadcast_strides(batch_dims(b), batch)};
  std::vector<std::pair<int64_t, int64_t>> offsets;
  StridedLoop(batch, strides).run([&](const auto& off, int64_t n, const auto& step) {
    for (int64_t i = 0; i < n; ++i) offsets.emplace_back(off[0] + i * step[0], off[1] + i * step[1]);
  });
  return offsets;
}

Kernel kernel(const KernelContext& ctx) {
  if (has_float16(ctx)) return compute_in_float32(ctx, kernel);
  const ir::Shape &a_shape = ctx.inputs[0]->shape, &b_shape = ctx.inputs[1]->shape, &y_shape = ctx.outputs[0]->shape;
  const bool ta = transpose_a(ctx.op.attrs), tb = transpose_b(ctx.op.attrs);
  GemmShape s = matrix_gemm_shape(a_shape, b_shape, ta, tb);
  const float *a = ctx.input<float>(0), *b = ctx.input<float>(1);
  float* y = ctx.output<float>(0);
  if (single_gemm(b_shape, ta)) {
    s.m *= ir::numel(batch_dims(y_shape));
    return [gemm = plan_gemm(ctx, s), a, b, y] { gemm.run(a, b, y, 1.0f, 0.0f); };
  }
  const std::vector<std::pair<int64_t, int64_t>> offsets = entry_offsets(a_shape, b_shape, y_shape);
  const auto count = static_cast<int64_t>(offsets.size());
  const int64_t a_size = s.m * s.k, b_size = s.k * s.n, y_size = s.m * s.n;
  return [gemm = plan_gemm(ctx, s, count), offsets, a, b, y, a_size, b_size, y_size] {
    float* out = y;
    for (const auto& [oa, ob] : offsets) {
      gemm.run(a + oa * a_size, b + ob * b_size, out, 1.0f, 0.0f);
      out += y_size;
    }
  };
}

// The single-GEMM case as a matmul of a, dY flattened to rows and b as a matrix.
std::vector<TensorId> single_gemm_grads(ir::GradContext& ctx) {
  const TensorId a = ctx.op.inputs[0], b = ctx.op.inputs[1];
  const ir::Shape a_shape = ctx.shape(a), b_shape = ctx.shape(b), y_shape = ctx.shape(ctx.output_grads[0]);
  auto rows = [&](TensorId t, const ir::Shape& s) { return reshape_to(ctx, t, {ir::numel(s) / s.back(), s.back()}); };
  const TensorId b2 = b_shape.size() == 2 ? b : reshape_to(ctx, b, {b_shape[b_shape.size() - 2], b_shape.back()});
  const auto [da, db] = matrix_product_grads(ctx, "matmul", rows(a, a_shape), b2, rows(ctx.output_grads[0], y_shape),
                                             ctx.needs_grad[0], ctx.needs_grad[1]);
  return {da == ir::kNoTensor ? da : reshape_to(ctx, da, a_shape),
          db == ir::kNoTensor || b2 == b ? db : reshape_to(ctx, db, b_shape)};
}

std::vector<TensorId> grad(ir::GradContext& ctx) {
  const TensorId a = ctx.op.inputs[0], b = ctx.op.inputs[1];
  if (single_gemm(ctx.shape(b), transpose_a(ctx.op.attrs))) return single_gemm_grads(ctx);
  const auto [da, db] =
      matrix_product_grads(ctx, "batch_matmul", a, b, ctx.output_grads[0], ctx.needs_grad[0], ctx.needs_grad[1]);
  return {da == ir::kNoTensor ? da : unbroadcast(ctx, da, ctx.shape(a)),
          db == ir::kNoTensor ? db : unbroadcast(ctx, db, ctx.shape(b))};
}

OpDef def() {
  OpDef d;
  d.name = "batch_matmul";
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
