// What matmul and batch_matmul share: the product op(A) op(B) of the last two dims of each
// operand (op = transpose when the attribute transpose_a / transpose_b is 1), its shape
// rule, its GEMM plan and its gradient formulas.
#pragma once

#include <string_view>
#include <utility>

#include "core/ops/op_def.h"
#include "core/ops/matmul/gemm.h"

namespace plexus::ops {

/// The attributes transpose_a and transpose_b (int, default 0).
std::vector<ir::AttrSpec> transpose_attr_specs();
ir::Attributes transpose_attrs(bool ta, bool tb);
bool transpose_a(const ir::Attributes& attrs);
bool transpose_b(const ir::Attributes& attrs);

/// The GEMM multiplying the last two dims of `a` and `b` (each of rank >= 2).
GemmShape matrix_gemm_shape(const ir::Shape& a, const ir::Shape& b, bool ta, bool tb);

/// Shape inference shared by both ops: float32 inputs of rank >= 2 whose inner dimensions
/// (of op(A) and op(B)) agree; returns the per-matrix GEMM.
GemmShape infer_matrix_product(const ir::InferContext& ctx);

/// Plans `shape` for the kernel of ctx.op and notes the choice (ctx.notes), saying it runs
/// `count` times per step.
Gemm plan_gemm(const KernelContext& ctx, const GemmShape& shape, int64_t count = 1);

/// Gradients of Y = op(A) op(B) built with op `type` (matmul or batch_matmul), transposes
/// folded into the GEMM flags: dA = dY op(B)^T (transposed back when A was), dB = op(A)^T dY
/// likewise. A gradient not `needed` is kNoTensor. Broadcast batch dims are not summed.
std::pair<ir::TensorId, ir::TensorId> matrix_product_grads(ir::GradContext& ctx, std::string_view type, ir::TensorId a,
                                                           ir::TensorId b, ir::TensorId dy, bool need_a, bool need_b);

}  // namespace plexus::ops
