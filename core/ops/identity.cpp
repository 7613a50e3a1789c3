// identity(x): a copy of x in a buffer of its own (PopXL ops.identity). Calls use it to
// pass an input by value when the called graph writes it in place (core/ir/call.h).
// Any dtype; the gradient is dy.
#include <cstring>

#include "core/ir/graph.h"

namespace plexus::ops {

namespace {

ir::OpDef identity_def() {
  ir::OpDef d;
  d.name = "identity";
  d.infer = [](const ir::InferContext& ctx) { return ir::InferResult{{{ctx.dtype(0), ctx.shape(0)}}}; };
  d.kernel = [](const ir::KernelContext& ctx) -> ir::Kernel {
    const std::byte* x = ctx.in[0];
    std::byte* y = ctx.out[0];
    const size_t bytes = ctx.inputs[0]->bytes();
    return [x, y, bytes] {
      if (x != y) std::memcpy(y, x, bytes);
    };
  };
  d.grad = [](ir::GradContext& ctx) { return std::vector<ir::TensorId>{ctx.output_grads[0]}; };
  return d;
}

const ir::OpRegistration identity_op{identity_def()};

}  // namespace

}  // namespace plexus::ops
