// softmax_cross_entropy(logits float32 [N,C], labels int32 [N]) -> float32 [] :
//   mean over rows n of (logsumexp(logits[n,:]) - logits[n, labels[n]])
// (PyTorch's cross_entropy with reduction="mean"; PopXL's nll_loss(log_softmax)).
// softmax_cross_entropy_grad(logits, labels, dloss []) -> [N,C] :
//   (softmax(logits) - onehot(labels)) * dloss / N
// A label outside [0, C) is a run error naming the op, the row and the label.
#include <cmath>

#include "core/ir/graph.h"

namespace plexus::ops {

namespace {

using ir::DType;
using ir::ErrorCode;
using ir::TensorId;

void check_inputs(const ir::InferContext& ctx) {
  ctx.expect_dtype(0, DType::Float32);
  ctx.expect_dtype(1, DType::Int32);
  if (ctx.rank(0) != 2 || ctx.rank(1) != 1 || ctx.shape(1)[0] != ctx.shape(0)[0]) {
    ctx.fail(ErrorCode::ShapeMismatch, "logits must be [N,C] and labels [N]");
  }
}

[[noreturn, gnu::cold]] void bad_label(const std::string& op, int64_t row, int32_t label, int64_t classes) {
  ir::fail(ErrorCode::Runtime, "op '" + op + "': label " + std::to_string(label) + " at row " + std::to_string(row) +
                                   " is outside [0, " + std::to_string(classes) + ")");
}

// Row max and log of the sum of exp(x - max).
struct RowStats {
  float max;
  float log_sum;
};

RowStats row_stats(const float* x, int64_t c) {
  float m = x[0];
  for (int64_t j = 1; j < c; ++j) m = std::max(m, x[j]);
  float sum = 0.0f;
  for (int64_t j = 0; j < c; ++j) sum += std::exp(x[j] - m);
  return {m, std::log(sum)};
}

ir::Kernel forward_kernel(const ir::KernelContext& ctx) {
  const int64_t n = ctx.inputs[0]->shape[0], c = ctx.inputs[0]->shape[1];
  return [x = ctx.input<float>(0), labels = ctx.input<int32_t>(1), loss = ctx.output<float>(0), n, c,
          name = ctx.op.name] {
    double total = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const int32_t label = labels[i];
      if (label < 0 || label >= c) bad_label(name, i, label, c);
      const float* row = x + i * c;
      const RowStats s = row_stats(row, c);
      total += static_cast<double>((s.max - row[label]) + s.log_sum);  // max - x first: exact for close values
    }
    *loss = static_cast<float>(total / static_cast<double>(n));
  };
}

ir::Kernel grad_kernel(const ir::KernelContext& ctx) {
  const int64_t n = ctx.inputs[0]->shape[0], c = ctx.inputs[0]->shape[1];
  return [x = ctx.input<float>(0), labels = ctx.input<int32_t>(1), dloss = ctx.input<float>(2),
          dx = ctx.output<float>(0), n, c, name = ctx.op.name] {
    const float scale = *dloss / static_cast<float>(n);
    for (int64_t i = 0; i < n; ++i) {
      const int32_t label = labels[i];
      if (label < 0 || label >= c) bad_label(name, i, label, c);
      const float* row = x + i * c;
      float* drow = dx + i * c;
      const RowStats s = row_stats(row, c);
      for (int64_t j = 0; j < c; ++j) drow[j] = std::exp(row[j] - s.max - s.log_sum) * scale;
      drow[label] -= scale;
    }
  };
}

ir::OpDef loss_def() {
  ir::OpDef d;
  d.name = "softmax_cross_entropy";
  d.min_inputs = d.max_inputs = 2;
  d.infer = [](const ir::InferContext& ctx) {
    check_inputs(ctx);
    return ir::InferResult{{{DType::Float32, {}}}};
  };
  d.kernel = forward_kernel;
  d.grad = [](ir::GradContext& ctx) {
    return std::vector<TensorId>{
        ctx.add("softmax_cross_entropy_grad", {ctx.op.inputs[0], ctx.op.inputs[1], ctx.output_grads[0]}),
        ir::kNoTensor};
  };
  return d;
}

ir::OpDef grad_def() {
  ir::OpDef d;
  d.name = "softmax_cross_entropy_grad";
  d.min_inputs = d.max_inputs = 3;
  d.infer = [](const ir::InferContext& ctx) {
    check_inputs(ctx);
    ctx.expect_dtype(2, DType::Float32);
    if (ctx.rank(2) != 0) ctx.fail(ErrorCode::ShapeMismatch, "dloss must be a scalar");
    return ir::InferResult{{{DType::Float32, ctx.shape(0)}}};
  };
  d.kernel = grad_kernel;
  return d;
}

const ir::OpRegistration loss_op{loss_def()};
const ir::OpRegistration loss_grad_op{grad_def()};

}  // namespace

}  // namespace plexus::ops
