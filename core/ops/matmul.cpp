// matmul: Y[M,N] = op(A) @ op(B) for float32 rank-2 inputs, op = transpose when the
// attribute transpose_a / transpose_b is 1. Runs on BLIS with the kernel set chosen for
// the shape when the session is created (gemm.h).
#include "core/ir/graph.h"
#include "core/ops/gemm.h"

namespace plexus::ops {

namespace {

using ir::DType;
using ir::ErrorCode;
using ir::TensorId;

GemmShape gemm_shape(const ir::Shape& a, const ir::Shape& b, bool ta, bool tb) {
  return GemmShape{ta ? a[1] : a[0], tb ? b[0] : b[1], ta ? a[0] : a[1], ta, tb};
}

ir::InferResult infer(const ir::InferContext& ctx) {
  ctx.expect_dtype(0, DType::Float32);
  ctx.expect_dtype(1, DType::Float32);
  if (ctx.rank(0) != 2 || ctx.rank(1) != 2) ctx.fail(ErrorCode::ShapeMismatch, "both inputs must have rank 2");
  const bool ta = ctx.attrs.get_int("transpose_a") != 0, tb = ctx.attrs.get_int("transpose_b") != 0;
  const int64_t k_a = ta ? ctx.shape(0)[0] : ctx.shape(0)[1];
  const int64_t k_b = tb ? ctx.shape(1)[1] : ctx.shape(1)[0];
  if (k_a != k_b) {
    ctx.fail(ErrorCode::ShapeMismatch, "inner dimensions differ (" + std::to_string(k_a) + " vs " +
                                           std::to_string(k_b) + ")");
  }
  const GemmShape s = gemm_shape(ctx.shape(0), ctx.shape(1), ta, tb);
  return {{{DType::Float32, {s.m, s.n}}}};
}

ir::Kernel kernel(const ir::KernelContext& ctx) {
  const bool ta = ctx.op.attrs.get_int("transpose_a") != 0, tb = ctx.op.attrs.get_int("transpose_b") != 0;
  const Gemm gemm = Gemm::plan(gemm_shape(ctx.inputs[0]->shape, ctx.inputs[1]->shape, ta, tb), ctx.max_threads);
  if (ctx.notes) {
    const GemmChoice& c = gemm.choice();
    ctx.notes->push_back(ctx.op.name + ": sgemm " + gemm.shape().to_string() + " -> " + c.arch + ", " +
                         std::to_string(c.threads) + " thread(s), " + std::to_string(static_cast<int>(c.gflops)) +
                         " GFLOP/s (" + c.source + ")");
  }
  return [gemm, a = ctx.input<float>(0), b = ctx.input<float>(1), y = ctx.output<float>(0)] {
    gemm.run(a, b, y, 1.0f, 0.0f);
  };
}

ir::Attributes transposes(bool ta, bool tb) {
  ir::Attributes attrs;
  attrs.set("transpose_a", int64_t{ta});
  attrs.set("transpose_b", int64_t{tb});
  return attrs;
}

// For Y = op(A) op(B) (see the derivation in each branch's comment).
std::vector<TensorId> grad(ir::GradContext& ctx) {
  const TensorId a = ctx.op.inputs[0], b = ctx.op.inputs[1], dy = ctx.output_grads[0];
  const bool ta = ctx.op.attrs.get_int("transpose_a") != 0, tb = ctx.op.attrs.get_int("transpose_b") != 0;
  TensorId da = ir::kNoTensor, db = ir::kNoTensor;
  if (ctx.needs_grad[0]) {
    // dA = dY B^T | B dY^T (A transposed) ; with B transposed: dY B | B^T dY^T
    da = ta ? ctx.add("matmul", {b, dy}, transposes(tb, true)) : ctx.add("matmul", {dy, b}, transposes(false, !tb));
  }
  if (ctx.needs_grad[1]) {
    // dB = A^T dY | A dY (A transposed) ; with B transposed: dY^T A | dY^T A^T
    db = tb ? ctx.add("matmul", {dy, a}, transposes(true, ta)) : ctx.add("matmul", {a, dy}, transposes(!ta, false));
  }
  return {da, db};
}

ir::OpDef def() {
  ir::OpDef d;
  d.name = "matmul";
  d.min_inputs = d.max_inputs = 2;
  d.attrs = {{"transpose_a", ir::AttrKind::Int, ir::AttrValue{int64_t{0}}},
             {"transpose_b", ir::AttrKind::Int, ir::AttrValue{int64_t{0}}}};
  d.infer = infer;
  d.kernel = kernel;
  d.grad = grad;
  return d;
}

const ir::OpRegistration registration{def()};

}  // namespace

}  // namespace plexus::ops
