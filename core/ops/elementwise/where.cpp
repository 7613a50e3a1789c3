// where(cond bool | uint8 | int32, a, b) -> a where cond != 0, else b, elementwise with numpy
// broadcasting of all three (numpy.where, torch.where, ONNX Where). a and b have one dtype,
// any, which the output takes. Used for masks, e.g. attention's causal mask:
// where(mask, scores, -1e9).
// Gradients: da = where(cond, dy, 0), db = where(cond, 0, dy), each summed over the dims
// along which a / b was broadcast; cond has none.
#include <cstdint>

#include "core/ir/graph.h"
#include "core/ops/op_def.h"
#include "core/ops/common/grad_helpers.h"
#include "core/ops/common/strided_loop.h"

namespace plexus::ops {

namespace {

using ir::DType;
using ir::ErrorCode;
using ir::TensorId;

ir::InferResult infer(const ir::InferContext& ctx) {
  if (ctx.dtype(0) != DType::UInt8 && ctx.dtype(0) != DType::Int32 && ctx.dtype(0) != DType::Bool) {
    ctx.fail(ErrorCode::DTypeMismatch, "cond (input 0) must be bool, uint8 or int32");
  }
  if (ctx.dtype(2) != ctx.dtype(1)) ctx.fail(ErrorCode::DTypeMismatch, "a and b (inputs 1 and 2) must have one dtype");
  ir::Shape ab, out;
  if (!ir::broadcast_shapes(ctx.shape(1), ctx.shape(2), ab) || !ir::broadcast_shapes(ctx.shape(0), ab, out)) {
    ctx.fail(ErrorCode::ShapeMismatch,
             "cond, a and b are not broadcast-compatible (numpy rules: trailing dims must "
             "be equal or 1)");
  }
  return {{{ctx.dtype(1), out}}};
}

// The output is contiguous and the loop visits its rows in order, so it needs no stride of
// its own: the three operands of the loop are cond, a and b.
template <class C, class T>
Kernel select_kernel(const KernelContext& ctx) {
  const ir::Shape& shape = ctx.outputs[0]->shape;
  const std::vector<int64_t> strides[3] = {broadcast_strides(ctx.inputs[0]->shape, shape),
                                           broadcast_strides(ctx.inputs[1]->shape, shape),
                                           broadcast_strides(ctx.inputs[2]->shape, shape)};
  return [loop = StridedLoop(shape, strides), cond = ctx.input<C>(0), a = ctx.input<T>(1), b = ctx.input<T>(2),
          out = ctx.output<T>(0)] {
    T* o = out;
    loop.run([&](const auto& off, int64_t n, const auto& step) {
      const C* c = cond + off[0];
      const T* pa = a + off[1];
      const T* pb = b + off[2];
      for (int64_t i = 0; i < n; ++i) o[i] = c[i * step[0]] != 0 ? pa[i * step[1]] : pb[i * step[2]];
      o += n;
    });
  };
}

// Selection copies elements: a and b are chosen by their element size only.
template <class C>
Kernel kernel_for_cond(const KernelContext& ctx) {
  switch (ir::dtype_size(ctx.inputs[1]->dtype)) {
    case 1:
      return select_kernel<C, uint8_t>(ctx);
    case 2:
      return select_kernel<C, uint16_t>(ctx);
    default:
      return select_kernel<C, uint32_t>(ctx);
  }
}

Kernel kernel(const KernelContext& ctx) {
  if (ctx.inputs[0]->dtype == DType::Int32) return kernel_for_cond<int32_t>(ctx);
  return kernel_for_cond<uint8_t>(ctx);  // uint8 and bool: nonzero selects a
}

std::vector<TensorId> grad(ir::GradContext& ctx) {
  const TensorId cond = ctx.op.inputs[0], dy = ctx.output_grads[0];
  const TensorId zero = scalar_constant(ctx.graph, 0.0f);
  std::vector<TensorId> grads{ir::kNoTensor, ir::kNoTensor, ir::kNoTensor};
  if (ctx.needs_grad[1]) grads[1] = unbroadcast(ctx, ctx.add("where", {cond, dy, zero}), ctx.shape(ctx.op.inputs[1]));
  if (ctx.needs_grad[2]) grads[2] = unbroadcast(ctx, ctx.add("where", {cond, zero, dy}), ctx.shape(ctx.op.inputs[2]));
  return grads;
}

OpDef def() {
  OpDef d;
  d.name = "where";
  d.min_inputs = d.max_inputs = 3;
  d.infer = infer;
  d.kernel = kernel;
  d.grad = grad;
  return d;
}

const OpRegistration registration{def()};

}  // namespace

}  // namespace plexus::ops
