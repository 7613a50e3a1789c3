// Unary elementwise ops and their gradient ops: relu, gelu (tanh approximation, as
// PyTorch's gelu(approximate="tanh") and PopXL's gelu), exp, log, sqrt, tanh (torch.exp,
// torch.log, torch.sqrt, torch.tanh), all float32 of any shape, and neg (any number type:
// float16 negated exactly, integers wrap around).
//   relu_grad(x, dy) = dy * (x > 0)
//   gelu_grad(x, dy) = dy * d/dx gelu(x)
//   exp_grad(x, dy)  = dy * exp(x)
//   log_grad(x, dy)  = dy / x              (dy * inf at x = 0, as PyTorch)
//   sqrt_grad(x, dy) = dy / (2 sqrt(x))   (dy * inf at x = 0, NaN for x < 0, as PyTorch)
//   tanh_grad(x, dy) = dy * (1 - tanh(x)^2)
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/ir/dtype_dispatch.h"
#include "core/ir/graph.h"
#include "core/ops/op_def.h"
#include "core/ops/common/grad_helpers.h"
#include "core/ops/elementwise/relu.h"
#include "core/ops/common/vector_clones.h"

namespace plexus::ops {

namespace {

using ir::DType;
using ir::TensorId;

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

ir::InferResult same_as_input(const ir::InferContext& ctx) { return {{{ctx.dtype(0), ctx.shape(0)}}}; }

ir::InferResult infer_float_unary(const ir::InferContext& ctx) {
  ctx.expect_dtype(0, DType::Float32);
  return same_as_input(ctx);
}

// (x, dy) -> dx, both float32 of one shape.
ir::InferResult infer_float_grad(const ir::InferContext& ctx) {
  ctx.expect_dtype(0, DType::Float32);
  ctx.expect_dtype(1, DType::Float32);
  if (ctx.shape(0) != ctx.shape(1)) ctx.fail(ir::ErrorCode::ShapeMismatch, "x and dy must have the same shape");
  return same_as_input(ctx);
}

template <class T, class F>
PLEXUS_VECTOR_CLONES void map_elements(const T* x, T* y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

template <class F>
PLEXUS_VECTOR_CLONES void zip_elements(const float* x, const float* dy, float* dx, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) dx[i] = f(x[i], dy[i]);
}

template <class T, class F>
Kernel map_kernel(const KernelContext& ctx, F f) {
  return [x = ctx.input<T>(0), y = ctx.output<T>(0), n = ir::numel(ctx.outputs[0]->shape), f] {
    map_elements(x, y, n, f);
  };
}

template <class F>
Kernel zip_kernel(const KernelContext& ctx, F f) {
  return [x = ctx.input<float>(0), dy = ctx.input<float>(1), dx = ctx.output<float>(0),
          n = ir::numel(ctx.outputs[0]->shape), f] { zip_elements(x, dy, dx, n, f); };
}

// tanh through one expf: glibc's tanhf costs several times more and dominated the MLP's
// step time. Absolute error < 2e-7, which is what gelu needs (it adds the result to 1).
float tanh_via_exp(float x) { return 1.0f - 2.0f / (std::exp(2.0f * x) + 1.0f); }

float gelu(float x) { return 0.5f * x * (1.0f + tanh_via_exp(kSqrt2OverPi * (x + kGeluCubic * x * x * x))); }

float gelu_derivative(float x) {
  const float inner = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
  const float t = tanh_via_exp(inner);
  const float d_inner = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * d_inner;
}

// A float32 activation y = f(x) whose gradient is the op `<name>_grad`(x, dy).
// Template parameters, not function pointers, so the element function inlines.
template <float (*F)(float)>
OpDef activation(const char* name) {
  OpDef def;
  def.name = name;
  def.infer = infer_float_unary;
  def.kernel = [](const KernelContext& ctx) { return map_kernel<float>(ctx, [](float x) { return F(x); }); };
  def.grad = [grad = std::string(name) + "_grad"](ir::GradContext& ctx) {
    return std::vector<TensorId>{ctx.add(grad, {ctx.op.inputs[0], ctx.output_grads[0]})};
  };
  return def;
}

template <float (*Derivative)(float)>
OpDef activation_grad(const char* name) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = 2;
  def.infer = infer_float_grad;
  def.kernel = [](const KernelContext& ctx) {
    return zip_kernel(ctx, [](float x, float dy) { return dy * Derivative(x); });
  };
  return def;
}

float relu_derivative(float x) { return relu_active(x) ? 1.0f : 0.0f; }

float exp_fn(float x) { return std::exp(x); }
float log_fn(float x) { return std::log(x); }
float log_derivative(float x) { return 1.0f / x; }
float sqrt_fn(float x) { return std::sqrt(x); }
float sqrt_derivative(float x) { return 0.5f / std::sqrt(x); }
// The tanh op uses std::tanh, not tanh_via_exp: 1 - 2/(e^2x + 1) loses relative precision
// as x -> 0 (its absolute error is that of a number near 1), and the op must be accurate
// to float32 rounding across its range.
float tanh_fn(float x) { return std::tanh(x); }
float tanh_derivative(float x) {
  const float t = std::tanh(x);
  return 1.0f - t * t;
}

// relu's gradient, relu_grad(y, dy) of its output y (y > 0 exactly where x > 0, so the same
// values as of its input x, which then need not live until the backward pass and may be
// fused away: core/compile/relu_fusion.h), except where a max_pool2d gradient folds it in
// (max_pool2d_grad relu_folded, pooling.cpp), relu -> max_pool2d or max_pool2d -> relu: the
// gradient then passes on as it is.
OpDef relu_def() {
  OpDef def = activation<relu>("relu");
  def.grad = [](ir::GradContext& ctx) {
    const TensorId dy = ctx.output_grads[0];
    if (is_relu_folded_pool_grad(ctx.graph, dy, ctx.op.outputs[0]) || relu_folds_into_pool_above(ctx, ctx.op.inputs[0])) {
      return std::vector<TensorId>{dy};
    }
    return std::vector<TensorId>{ctx.add("relu_grad", {ctx.op.outputs[0], dy})};
  };
  return def;
}

const OpRegistration relu_op{relu_def()};
const OpRegistration relu_grad_op{activation_grad<relu_derivative>("relu_grad")};
const OpRegistration gelu_op{activation<gelu>("gelu")};
const OpRegistration gelu_grad_op{activation_grad<gelu_derivative>("gelu_grad")};
const OpRegistration exp_op{activation<exp_fn>("exp")};
const OpRegistration exp_grad_op{activation_grad<exp_fn>("exp_grad")};
const OpRegistration log_op{activation<log_fn>("log")};
const OpRegistration log_grad_op{activation_grad<log_derivative>("log_grad")};
const OpRegistration sqrt_op{activation<sqrt_fn>("sqrt")};
const OpRegistration sqrt_grad_op{activation_grad<sqrt_derivative>("sqrt_grad")};
const OpRegistration tanh_op{activation<tanh_fn>("tanh")};
const OpRegistration tanh_grad_op{activation_grad<tanh_derivative>("tanh_grad")};

OpDef neg_def() {
  OpDef def;
  def.name = "neg";
  def.infer = [](const ir::InferContext& ctx) {
    ctx.expect_numeric(0);
    return same_as_input(ctx);
  };
  def.kernel = [](const KernelContext& ctx) {
    return ir::visit_arithmetic(ctx.inputs[0]->dtype, [&](auto tag) -> Kernel {
      using T = typename decltype(tag)::type;
      return map_kernel<T>(ctx, [](T v) {
        if constexpr (std::is_integral_v<T>) {
          return static_cast<T>(uint64_t{0} - static_cast<uint64_t>(v));  // wraps: -INT32_MIN = INT32_MIN
        } else {
          return ir::store<T>(-ir::load(v));
        }
      });
    });
  };
  def.grad = [](ir::GradContext& ctx) { return std::vector<TensorId>{ctx.add("neg", {ctx.output_grads[0]})}; };
  return def;
}
const OpRegistration neg_op{neg_def()};

}  // namespace

}  // namespace plexus::ops
