#include "core/ops/matmul/matrix_product.h"

#include <string>

#include "core/ir/graph.h"
#include "core/ops/op_def.h"
#include "core/ops/common/float32_compute.h"

namespace plexus::ops {

using ir::DType;
using ir::ErrorCode;
using ir::TensorId;

std::vector<ir::AttrSpec> transpose_attr_specs() {
  return {{"transpose_a", ir::AttrKind::Int, ir::AttrValue{int64_t{0}}},
          {"transpose_b", ir::AttrKind::Int, ir::AttrValue{int64_t{0}}}};
}

ir::Attributes transpose_attrs(bool ta, bool tb) {
  ir::Attributes attrs;
  attrs.set("transpose_a", int64_t{ta});
  attrs.set("transpose_b", int64_t{tb});
  return attrs;
}

bool transpose_a(const ir::Attributes& attrs) { return attrs.get_int("transpose_a") != 0; }
bool transpose_b(const ir::Attributes& attrs) { return attrs.get_int("transpose_b") != 0; }

GemmShape matrix_gemm_shape(const ir::Shape& a, const ir::Shape& b, bool ta, bool tb) {
  const int64_t a0 = a[a.size() - 2], a1 = a[a.size() - 1], b0 = b[b.size() - 2], b1 = b[b.size() - 1];
  return GemmShape{ta ? a1 : a0, tb ? b0 : b1, ta ? a0 : a1, ta, tb};
}

GemmShape infer_matrix_product(const ir::InferContext& ctx) {
  expect_float_inputs(ctx, 2);
  if (ctx.rank(0) < 2 || ctx.rank(1) < 2) ctx.fail(ErrorCode::ShapeMismatch, "both inputs must have rank >= 2");
  const bool ta = transpose_a(ctx.attrs), tb = transpose_b(ctx.attrs);
  const GemmShape s = matrix_gemm_shape(ctx.shape(0), ctx.shape(1), ta, tb);
  const ir::Shape& b = ctx.shape(1);
  const int64_t k_b = tb ? b[b.size() - 1] : b[b.size() - 2];
  if (s.k != k_b) {
    ctx.fail(ErrorCode::ShapeMismatch,
             "inner dimensions differ (" + std::to_string(s.k) + " vs " + std::to_string(k_b) + ")");
  }
  return s;
}

Gemm plan_gemm(const KernelContext& ctx, const GemmShape& shape, int64_t count) {
  const Gemm gemm = Gemm::plan(shape, ctx.max_threads);
  if (ctx.notes) {
    const GemmChoice& c = gemm.choice();
    ctx.notes->push_back(ctx.op.name + ": sgemm " + gemm.shape().to_string() +
                         (count > 1 ? " (x" + std::to_string(count) + ")" : "") + " -> " + c.arch + ", " +
                         std::to_string(c.threads) + " thread(s) (" + c.source + ")");
  }
  return gemm;
}

std::pair<TensorId, TensorId> matrix_product_grads(ir::GradContext& ctx, std::string_view type, TensorId a, TensorId b,
                                                   TensorId dy, bool need_a, bool need_b) {
  const bool ta = transpose_a(ctx.op.attrs), tb = transpose_b(ctx.op.attrs);
  TensorId da = ir::kNoTensor, db = ir::kNoTensor;
  if (need_a) {
    // dA = dY B^T | B dY^T (A transposed) ; with B transposed: dY B | B^T dY^T
    da = ta ? ctx.add(type, {b, dy}, transpose_attrs(tb, true)) : ctx.add(type, {dy, b}, transpose_attrs(false, !tb));
  }
  if (need_b) {
    // dB = A^T dY | A dY (A transposed) ; with B transposed: dY^T A | dY^T A^T
    db = tb ? ctx.add(type, {dy, a}, transpose_attrs(true, ta)) : ctx.add(type, {a, dy}, transpose_attrs(!ta, false));
  }
  return {da, db};
}

}  // namespace plexus::ops
