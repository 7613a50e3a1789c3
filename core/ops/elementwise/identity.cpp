// identity(x) and detach(x): a copy of x in a buffer of its own, any dtype.
// identity (PopXL ops.identity) passes the gradient through (dy); calls use it to pass an
// input by value when the called graph writes it in place (core/ir/call.h).
// detach (PopXL ops.detach, PyTorch Tensor.detach) stops it: its gradient rule gives x
// none, so autodiff sums only the contributions of x's other paths (and refuses a
// gradient of x whose every path to the loss is detached).
#include <cstring>
#include <string>

#include "core/ir/graph.h"
#include "core/ops/op_def.h"

namespace plexus::ops {

namespace {

OpDef copy_def(std::string name, ir::TensorId (*input_grad)(ir::GradContext&)) {
  OpDef d;
  d.name = std::move(name);
  d.infer = [](const ir::InferContext& ctx) { return ir::InferResult{{{ctx.dtype(0), ctx.shape(0)}}}; };
  d.kernel = [](const KernelContext& ctx) -> Kernel {
    const std::byte* x = ctx.in[0];
    std::byte* y = ctx.out[0];
    const size_t bytes = ctx.inputs[0]->bytes();
    return [x, y, bytes] {
      if (x != y) std::memcpy(y, x, bytes);
    };
  };
  d.grad = [input_grad](ir::GradContext& ctx) { return std::vector<ir::TensorId>{input_grad(ctx)}; };
  return d;
}

const OpRegistration identity_op{copy_def("identity", [](ir::GradContext& ctx) { return ctx.output_grads[0]; })};
const OpRegistration detach_op{copy_def("detach", [](ir::GradContext&) { return ir::kNoTensor; })};

}  // namespace

}  // namespace plexus::ops
