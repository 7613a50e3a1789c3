// Weight-update ops, applied in place to variables.
//   scaled_add_(x, y; a=1, b=1):  x <- a*x + b*y   (PopXL ops.scaled_add_; SGD is
//   scaled_add_(w, grad, b=-lr), seed 000's update_weights_bias). Output 0 is x itself.
//   adamw_(w, grad, m, v, step, [lr]; lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01)
//     PyTorch's torch.optim.AdamW (amsgrad off, maximize off), one update:
//       t = step + 1 (written back to step)
//       w <- w * (1 - lr*weight_decay)                      (decoupled weight decay)
//       m <- beta1*m + (1-beta1)*grad;  v <- beta2*v + (1-beta2)*grad^2
//       w <- w - lr/(1-beta1^t) * m / (sqrt(v)/sqrt(1-beta2^t) + eps)
//     Outputs 0..3 are w, m, v and step, updated in place. step is a float32 [] or [1]
//     tensor holding the number of updates so far (PyTorch's per-parameter state['step']:
//     give each parameter its own step tensor). The bias corrections are computed in
//     double from t at run time, the elementwise update in float32 in PyTorch's order.
//     The optional 6th input lr, a float32 [] or [1] tensor read at run time, overrides
//     the lr attribute (PyTorch's tensor lr), so a schedule (lr_schedule) changes the
//     rate without recompiling; its value is not checked (the attribute must be >= 0).
//   sgd_momentum_(w, grad, momentum_buffer, step, [lr]; lr=0.01, momentum=0.9, dampening=0,
//                 weight_decay=0, nesterov=0)
//     PyTorch's torch.optim.SGD (maximize off, _single_tensor_sgd), one update, in float32
//     in PyTorch's order:
//       g <- grad + weight_decay*w
//       if momentum != 0:
//         buf <- g                                   on the first step (step == 0: PyTorch's
//                                                   momentum_buffer is None, so buf = clone(g))
//         buf <- momentum*buf + (1-dampening)*g      otherwise
//         g <- g + momentum*buf if nesterov else buf
//       w <- w - lr*g;  step <- step + 1
//     Outputs 0..2 are w, momentum_buffer and step, updated in place; with momentum 0 it is
//     plain SGD and the buffer is left as it is. step (float32 [] or [1], the updates so
//     far) only tells the first step from the others: a buffer that merely starts at zero
//     would instead give (1-dampening)*g on the first step. The optional lr tensor
//     overrides the lr attribute, as for adamw_. nesterov needs momentum > 0 and dampening 0.
#include <cmath>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/ops/op_def.h"
#include "core/ops/common/number_format.h"
#include "core/ops/optimizer/optimizer_util.h"
#include "core/ops/common/vector_clones.h"

namespace plexus::ops {

namespace {

using ir::DType;

/// scaled_add_'s loop over n elements: x = a x + b y, or x += b y when a is 1 (one rounding,
/// as before the clones). y may be x.
PLEXUS_VECTOR_CLONES void scaled_add_elements(float* x, const float* y, int64_t n, float a, float b) {
  if (a == 1.0f) {
    for (int64_t i = 0; i < n; ++i) x[i] += b * y[i];
  } else {
    for (int64_t i = 0; i < n; ++i) x[i] = a * x[i] + b * y[i];
  }
}

OpDef scaled_add_def() {
  OpDef d;
  d.name = "scaled_add_";
  d.min_inputs = d.max_inputs = 2;
  d.attrs = {{"a", ir::AttrKind::Float, ir::AttrValue{1.0}}, {"b", ir::AttrKind::Float, ir::AttrValue{1.0}}};
  d.inplace_inputs = {0};
  d.gradient_input = 1;  // SGD: scaled_add_(w, grad, b=-lr)
  d.infer = [](const ir::InferContext& ctx) {
    ctx.expect_dtype(0, DType::Float32);
    ctx.expect_dtype(1, DType::Float32);
    if (ctx.shape(0) != ctx.shape(1)) ctx.fail(ir::ErrorCode::ShapeMismatch, "x and y must have the same shape");
    return ir::InferResult{{{DType::Float32, ctx.shape(0)}}};
  };
  d.kernel = [](const KernelContext& ctx) -> Kernel {
    const auto a = static_cast<float>(ctx.op.attrs.get_float("a"));
    const auto b = static_cast<float>(ctx.op.attrs.get_float("b"));
    return [x = ctx.output<float>(0), y = ctx.input<float>(1), n = ir::numel(ctx.outputs[0]->shape), a, b] {
      scaled_add_elements(x, y, n, a, b);
    };
  };
  return d;
}

const OpRegistration scaled_add_op{scaled_add_def()};

// adamw_'s inputs, in order, for error messages.
const std::vector<std::string> kAdamWInputs = {"w", "grad", "m", "v", "step", "lr"};

// adamw_'s inputs: float32, m and v shaped as w, step one element, an optional lr tensor.
void check_adamw_inputs(const ir::InferContext& ctx) {
  expect_shaped_as_weight(ctx, 4, kAdamWInputs);
  expect_step_and_optional_lr(ctx, 4);
}

// adamw_'s hyper-parameters: betas in [0, 1), the others >= 0.
void check_adamw_attrs(const ir::InferContext& ctx) {
  for (const char* beta : {"beta1", "beta2"}) {
    const double value = ctx.attrs.get_float(beta);
    if (!(value >= 0.0 && value < 1.0)) {
      ctx.fail(ir::ErrorCode::InvalidArgument, std::string(beta) + " is " + number(value) + ", must be in [0, 1)");
    }
  }
  expect_non_negative(ctx, {"lr", "eps", "weight_decay"});
}

ir::InferResult adamw_infer(const ir::InferContext& ctx) {
  check_adamw_inputs(ctx);
  check_adamw_attrs(ctx);
  expect_distinct_storage(ctx, {0, 2, 3, 4}, kAdamWInputs,
                          "w, m, v and step are updated in place and must be distinct tensors");
  return outputs_shaped_as(ctx, {0, 2, 3, 4});
}

// AdamW (Loshchilov & Hutter, decoupled weight decay; PyTorch's AdamW): step += 1,
// m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
// w = w (1 - lr wd) - lr / (1 - b1^t) m / (sqrt(v) / sqrt(1 - b2^t) + eps).
/// The float32 constants of one AdamW update (adamw_'s formula at the top of the file).
struct AdamwStep {
  float b1, c1, b2, c2;  // beta1, 1 - beta1, beta2, 1 - beta2
  float decay, step_size, bias2_sqrt, eps;
};

/// AdamW's elementwise update of n elements in place; g is read before w is written, in
/// case grad shares w's storage.
PLEXUS_VECTOR_CLONES void adamw_elements(float* w, const float* g, float* m, float* v, int64_t n, AdamwStep c) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float mi = c.b1 * m[i] + c.c1 * gi;
    const float vi = c.b2 * v[i] + c.c2 * (gi * gi);
    m[i] = mi;
    v[i] = vi;
    w[i] = w[i] * c.decay - c.step_size * mi / (std::sqrt(vi) / c.bias2_sqrt + c.eps);
  }
}

Kernel adamw_kernel(const KernelContext& ctx) {
  const ir::Attributes& a = ctx.op.attrs;
  const double beta1 = a.get_float("beta1"), beta2 = a.get_float("beta2"), weight_decay = a.get_float("weight_decay");
  const auto eps = static_cast<float>(a.get_float("eps"));
  return [w = ctx.output<float>(0), g = ctx.input<float>(1), m = ctx.output<float>(1), v = ctx.output<float>(2),
          step = ctx.output<float>(3), n = ir::numel(ctx.outputs[0]->shape), lr_source = LearningRate(ctx, 5), beta1,
          beta2, eps, weight_decay] {
    const double lr = lr_source.value();  // read before any write
    const auto decay = static_cast<float>(1.0 - lr * weight_decay);
    const float t = *step + 1.0f;
    *step = t;
    const double bias1 = 1.0 - std::pow(beta1, static_cast<double>(t));
    const double bias2 = 1.0 - std::pow(beta2, static_cast<double>(t));
    const auto step_size = static_cast<float>(lr / bias1);
    const auto bias2_sqrt = static_cast<float>(std::sqrt(bias2));
    const AdamwStep c{static_cast<float>(beta1), static_cast<float>(1.0 - beta1), static_cast<float>(beta2),
                      static_cast<float>(1.0 - beta2), decay, step_size, bias2_sqrt, eps};
    adamw_elements(w, g, m, v, n, c);
  };
}

OpDef adamw_def() {
  OpDef d;
  d.name = "adamw_";
  d.min_inputs = 5;
  d.max_inputs = 6;  // the optional lr tensor
  d.attrs = {{"lr", ir::AttrKind::Float, ir::AttrValue{1e-3}},
             {"beta1", ir::AttrKind::Float, ir::AttrValue{0.9}},
             {"beta2", ir::AttrKind::Float, ir::AttrValue{0.999}},
             {"eps", ir::AttrKind::Float, ir::AttrValue{1e-8}},
             {"weight_decay", ir::AttrKind::Float, ir::AttrValue{0.01}}};
  d.inplace_inputs = {0, 2, 3, 4};
  d.optimizer_state_inputs = {2, 3, 4};  // m, v and step: offloadable (seed 003)
  d.gradient_input = 1;
  d.infer = adamw_infer;
  d.kernel = adamw_kernel;
  return d;
}

const OpRegistration adamw_op{adamw_def()};

// sgd_momentum_'s inputs, in order, for error messages.
const std::vector<std::string> kSgdInputs = {"w", "grad", "momentum_buffer", "step", "lr"};

void check_sgd_inputs(const ir::InferContext& ctx) {
  expect_shaped_as_weight(ctx, 3, kSgdInputs);
  expect_step_and_optional_lr(ctx, 3);
}

// torch.optim.SGD's checks: lr, momentum and weight_decay >= 0, and Nesterov momentum
// needs a momentum and zero dampening.
void check_sgd_attrs(const ir::InferContext& ctx) {
  expect_non_negative(ctx, {"lr", "momentum", "weight_decay"});
  const double dampening = ctx.attrs.get_float("dampening");
  if (!std::isfinite(dampening)) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "dampening is " + number(dampening) + ", must be finite");
  }
  const int64_t nesterov = ctx.attrs.get_int("nesterov");
  if (nesterov != 0 && nesterov != 1) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "nesterov is " + std::to_string(nesterov) + ", must be 0 or 1");
  }
  if (nesterov == 1 && (ctx.attrs.get_float("momentum") <= 0.0 || dampening != 0.0)) {
    ctx.fail(ir::ErrorCode::InvalidArgument,
             "nesterov momentum requires momentum > 0 and dampening == 0 (as torch.optim.SGD), got momentum " +
                 number(ctx.attrs.get_float("momentum")) + " and dampening " + number(dampening));
  }
}

ir::InferResult sgd_infer(const ir::InferContext& ctx) {
  check_sgd_inputs(ctx);
  check_sgd_attrs(ctx);
  expect_distinct_storage(ctx, {0, 2, 3}, kSgdInputs,
                          "w, momentum_buffer and step are updated in place and must be distinct tensors");
  return outputs_shaped_as(ctx, {0, 2, 3});
}

struct SgdHyper {
  float momentum, dampening, weight_decay;
  bool nesterov;
};

// One element of PyTorch's _single_tensor_sgd in float32: the gradient with weight decay,
// the momentum buffer (a copy of it on the first step) and the direction taken.
inline float sgd_direction(float g, float w, float& buf, bool first, const SgdHyper& h) {
  if (h.weight_decay != 0.0f) g = g + h.weight_decay * w;  // grad.add(param, alpha=weight_decay)
  if (h.momentum == 0.0f) return g;
  buf = first ? g : h.momentum * buf + (1.0f - h.dampening) * g;  // buf.mul_(momentum).add_(g, alpha=1-dampening)
  return h.nesterov ? g + h.momentum * buf : buf;
}

Kernel sgd_kernel(const KernelContext& ctx) {
  const ir::Attributes& a = ctx.op.attrs;
  const SgdHyper h{static_cast<float>(a.get_float("momentum")), static_cast<float>(a.get_float("dampening")),
                   static_cast<float>(a.get_float("weight_decay")), a.get_int("nesterov") == 1};
  return [w = ctx.output<float>(0), g = ctx.input<float>(1), buf = ctx.output<float>(1), step = ctx.output<float>(2),
          n = ir::numel(ctx.outputs[0]->shape), lr_source = LearningRate(ctx, 4), h] {
    const auto lr = static_cast<float>(lr_source.value());  // read before any write
    const bool first = *step == 0.0f;  // PyTorch: momentum_buffer is None before the first step
    *step += 1.0f;
    for (int64_t i = 0; i < n; ++i) {
      const float d = sgd_direction(g[i], w[i], buf[i], first, h);  // g[i] read before w[i] is written
      w[i] = w[i] + -lr * d;                                           // param.add_(grad, alpha=-lr)
    }
  };
}

OpDef sgd_momentum_def() {
  OpDef d;
  d.name = "sgd_momentum_";
  d.min_inputs = 4;
  d.max_inputs = 5;  // the optional lr tensor
  d.attrs = {{"lr", ir::AttrKind::Float, ir::AttrValue{0.01}},
             {"momentum", ir::AttrKind::Float, ir::AttrValue{0.9}},
             {"dampening", ir::AttrKind::Float, ir::AttrValue{0.0}},
             {"weight_decay", ir::AttrKind::Float, ir::AttrValue{0.0}},
             {"nesterov", ir::AttrKind::Int, ir::AttrValue{int64_t{0}}}};
  d.inplace_inputs = {0, 2, 3};
  d.optimizer_state_inputs = {2, 3};  // momentum_buffer and step
  d.gradient_input = 1;
  d.infer = sgd_infer;
  d.kernel = sgd_kernel;
  return d;
}

const OpRegistration sgd_momentum_op{sgd_momentum_def()};

}  // namespace

}  // namespace plexus::ops
