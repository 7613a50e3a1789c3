// Gradient clipping by global norm, PyTorch's torch.nn.utils.clip_grad_norm_(parameters,
// max_norm, norm_type=2.0, error_if_nonfinite=False), split in two so that a collective
// can sit between the halves:
//   global_sq_norm(g0, ..., gk) -> float32 []: sum over every element of every input of
//     its square, accumulated in double (the square of clip_grad_norm_'s total_norm).
//   clip_scale_(g0, ..., gk, total_sq_norm; max_norm=1, eps=1e-6): every g scaled in place
//     by min(1, max_norm / (sqrt(total_sq_norm) + eps)) (clip_grad_norm_'s clip_coef,
//     clamped to 1; a NaN norm makes NaN gradients, as PyTorch's does). Outputs 0..k are
//     g0..gk. total_sq_norm is a float32 [] or [1] tensor.
//   clip_by_global_norm_(g0, ..., gk; max_norm=1, eps=1e-6): both in one op. Output 0 is
//     the norm before clipping, sqrt(sum of squares) (clip_grad_norm_'s return value),
//     outputs 1..k+1 are g0..gk, scaled in place.
// Each op sees only the tensors given to it: for replica-sharded gradients the shards'
// global_sq_norm is summed with replicated_all_reduce over the shard domain before
// clip_scale_ (padding is zero and adds nothing). Gradients are float32 tensors of any
// shape, distinct non-constants, at most kMaxGradients of them.
#include <cmath>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/ops/op_def.h"
#include "core/ops/common/number_format.h"
#include "core/ops/optimizer/optimizer_util.h"

namespace plexus::ops {

namespace {

// Enough for a GPT of a few dozen layers (GPT-2 124M has 148 parameter tensors).
constexpr size_t kMaxGradients = 1024;

// g0, g1, ... for error messages; `last` names the last input instead when not empty.
std::vector<std::string> gradient_names(size_t count, const std::string& last = "") {
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i) names.push_back("g" + std::to_string(i));
  if (!last.empty()) names.back() = last;
  return names;
}

// The first `count` inputs: float32 gradients that, when `updated`, are distinct tensors.
void check_gradients(const ir::InferContext& ctx, size_t count, const std::vector<std::string>& names, bool updated) {
  std::vector<size_t> indices;
  for (size_t i = 0; i < count; ++i) {
    expect_f32_input(ctx, i, names[i]);
    indices.push_back(i);
  }
  if (updated) {
    expect_distinct_storage(ctx, indices, names, "the gradients are scaled in place and must be distinct tensors");
  }
}

ir::TensorType scalar_f32() { return {ir::DType::Float32, {}}; }

// Every input's type as an output: the gradients updated in place.
void push_gradients(const ir::InferContext& ctx, size_t count, ir::InferResult& r) {
  for (size_t i = 0; i < count; ++i) r.outputs.push_back({ir::DType::Float32, ctx.shape(i)});
}

// The gradients a kernel works on: buffers (const float when only read) and element counts.
template <class T>
struct Gradients {
  std::vector<T*> data;
  std::vector<int64_t> sizes;
};

// Inputs [0, count), read only.
Gradients<const float> gradient_inputs(const KernelContext& ctx, size_t count) {
  Gradients<const float> g;
  for (size_t i = 0; i < count; ++i) {
    g.data.push_back(ctx.input<float>(i));
    g.sizes.push_back(ir::numel(ctx.inputs[i]->shape));
  }
  return g;
}

// Outputs [first, first + count): the gradients updated in place.
Gradients<float> gradient_outputs(const KernelContext& ctx, size_t first, size_t count) {
  Gradients<float> g;
  for (size_t i = first; i < first + count; ++i) {
    g.data.push_back(ctx.output<float>(i));
    g.sizes.push_back(ir::numel(ctx.outputs[i]->shape));
  }
  return g;
}

template <class T>
double sum_of_squares(const Gradients<T>& g) {
  double sum = 0.0;
  for (size_t t = 0; t < g.data.size(); ++t) {
    for (int64_t i = 0; i < g.sizes[t]; ++i) sum += static_cast<double>(g.data[t][i]) * g.data[t][i];
  }
  return sum;
}

// clip_grad_norm_'s clip_coef_clamped = clamp(max_norm / (norm + eps), max=1): NaN stays NaN.
float clip_coefficient(double norm, double max_norm, double eps) {
  const double coef = max_norm / (norm + eps);
  return static_cast<float>(coef > 1.0 ? 1.0 : coef);
}

void scale(const Gradients<float>& g, float coef) {
  if (coef == 1.0f) return;  // multiplying by 1 changes nothing
  for (size_t t = 0; t < g.data.size(); ++t) {
    for (int64_t i = 0; i < g.sizes[t]; ++i) g.data[t][i] *= coef;
  }
}

void check_clip_attrs(const ir::InferContext& ctx) { expect_non_negative(ctx, {"max_norm", "eps"}); }

std::vector<ir::AttrSpec> clip_attrs() {
  return {{"max_norm", ir::AttrKind::Float, ir::AttrValue{1.0}}, {"eps", ir::AttrKind::Float, ir::AttrValue{1e-6}}};
}

// in-place targets 0, 1, ..., kMaxGradients - 1 after `fresh` fresh outputs.
std::vector<int> inplace_gradients(size_t fresh) {
  std::vector<int> inplace(fresh, -1);
  for (size_t i = 0; i < kMaxGradients; ++i) inplace.push_back(static_cast<int>(i));
  return inplace;
}

// --- global_sq_norm ---------------------------------------------------------------------

OpDef global_sq_norm_def() {
  OpDef d;
  d.name = "global_sq_norm";
  d.min_inputs = 1;
  d.max_inputs = kMaxGradients;
  d.infer = [](const ir::InferContext& ctx) {
    check_gradients(ctx, ctx.inputs.size(), gradient_names(ctx.inputs.size()), false);
    return ir::InferResult{{scalar_f32()}};
  };
  d.kernel = [](const KernelContext& ctx) -> Kernel {
    return [g = gradient_inputs(ctx, ctx.inputs.size()), out = ctx.output<float>(0)] {
      *out = static_cast<float>(sum_of_squares(g));
    };
  };
  return d;
}

// --- clip_scale_ ------------------------------------------------------------------------

OpDef clip_scale_def() {
  OpDef d;
  d.name = "clip_scale_";
  d.min_inputs = 2;
  d.max_inputs = kMaxGradients + 1;
  d.attrs = clip_attrs();
  d.inplace_inputs = inplace_gradients(0);
  d.infer = [](const ir::InferContext& ctx) {
    const size_t count = ctx.inputs.size() - 1;
    const std::vector<std::string> names = gradient_names(count + 1, "total_sq_norm");
    check_gradients(ctx, count, names, true);
    expect_f32_scalar(ctx, count, "total_sq_norm", "the sum of the squares of every gradient");
    check_clip_attrs(ctx);
    ir::InferResult r;
    push_gradients(ctx, count, r);
    return r;
  };
  d.kernel = [](const KernelContext& ctx) -> Kernel {
    const size_t count = ctx.inputs.size() - 1;
    return [g = gradient_outputs(ctx, 0, count), total = ctx.input<float>(count),
            max_norm = ctx.op.attrs.get_float("max_norm"), eps = ctx.op.attrs.get_float("eps")] {
      scale(g, clip_coefficient(std::sqrt(static_cast<double>(*total)), max_norm, eps));
    };
  };
  return d;
}

// --- clip_by_global_norm_ ---------------------------------------------------------------

OpDef clip_by_global_norm_def() {
  OpDef d;
  d.name = "clip_by_global_norm_";
  d.min_inputs = 1;
  d.max_inputs = kMaxGradients;
  d.attrs = clip_attrs();
  d.inplace_inputs = inplace_gradients(1);  // output 0: the norm
  d.infer = [](const ir::InferContext& ctx) {
    check_gradients(ctx, ctx.inputs.size(), gradient_names(ctx.inputs.size()), true);
    check_clip_attrs(ctx);
    ir::InferResult r{{scalar_f32()}};
    push_gradients(ctx, ctx.inputs.size(), r);
    return r;
  };
  d.kernel = [](const KernelContext& ctx) -> Kernel {
    return [g = gradient_outputs(ctx, 1, ctx.inputs.size()), norm_out = ctx.output<float>(0),
            max_norm = ctx.op.attrs.get_float("max_norm"), eps = ctx.op.attrs.get_float("eps")] {
      // PyTorch's total_norm is a float32 tensor: the coefficient uses its rounded value.
      const auto norm = static_cast<float>(std::sqrt(sum_of_squares(g)));
      *norm_out = norm;
      scale(g, clip_coefficient(norm, max_norm, eps));
    };
  };
  return d;
}

const OpRegistration global_sq_norm_op{global_sq_norm_def()};
const OpRegistration clip_scale_op{clip_scale_def()};
const OpRegistration clip_by_global_norm_op{clip_by_global_norm_def()};

}  // namespace

}  // namespace plexus::ops
