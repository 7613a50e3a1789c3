// softmax_cross_entropy(logits float32 [..., C], labels int32 [...]; ignore_index) -> float32 []
//   Every index of logits' leading dims is a row ([N] for [N,C], [N,T] for [N,T,C]: rank >= 2,
//   classes on the last dim); labels has the leading dims' shape. The loss is the mean, over
//   the rows whose label is not `ignore_index` (int, default -100 as PyTorch), of
//   logsumexp(logits[row, :]) - logits[row, label]: PyTorch's
//   F.cross_entropy(logits.reshape(-1, C), labels.reshape(-1), ignore_index=ignore_index)
//   with reduction="mean" (PyTorch itself takes the class dim second for rank > 2; here it
//   is last, as a transformer's [N, T, vocab] logits are laid out), PopXL's
//   nll_loss(log_softmax). When every row is ignored the loss is 0, where PyTorch gives NaN
//   (0 / 0): a batch of padding only then adds nothing to a summed or averaged loss.
// softmax_cross_entropy_grad(logits, labels, dloss []; ignore_index) -> logits' shape :
//   (softmax(logits) - onehot(labels)) * dloss / (number of rows not ignored) on the rows
//   not ignored, 0 on the ignored rows (and everywhere when every row is ignored).
// A label that is neither ignore_index nor in [0, C) is a run error naming the op, the row
// (its flat index over the leading dims) and the label.
#include <algorithm>
#include <cmath>

#include "core/ir/graph.h"
#include "core/ops/op_def.h"

namespace plexus::ops {

namespace {

using ir::DType;
using ir::ErrorCode;
using ir::TensorId;

void check_inputs(const ir::InferContext& ctx) {
  ctx.expect_dtype(0, DType::Float32);
  ctx.expect_dtype(1, DType::Int32);
  const ir::Shape& logits = ctx.shape(0);
  if (ctx.rank(0) < 2 || ctx.shape(1) != ir::Shape(logits.begin(), logits.end() - 1)) {
    ctx.fail(ErrorCode::ShapeMismatch,
             "logits must be [N,C] and labels [N]; in general logits [..., C] of rank >= 2 and labels int32 of "
             "logits' shape without its last dim");
  }
}

[[noreturn, gnu::cold]] void bad_label(const std::string& op, int64_t row, int32_t label, int64_t classes,
                                       int64_t ignore_index) {
  ir::fail(ErrorCode::Runtime, "op '" + op + "': label " + std::to_string(label) + " at row " + std::to_string(row) +
                                   " is outside [0, " + std::to_string(classes) + ") and is not ignore_index (" +
                                   std::to_string(ignore_index) + ")");
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

// The rows of the logits: every index of the leading dims, C classes each.
struct Rows {
  int64_t count;
  int64_t c;
};

Rows rows_of(const ir::Shape& logits) { return {ir::numel(logits) / logits.back(), logits.back()}; }

// True when row i counts; false when its label is ignore_index; a run error when the label
// is neither that nor a class.
bool counts(const std::string& op, const int32_t* labels, int64_t i, Rows rows, int64_t ignore_index) {
  const int32_t label = labels[i];
  if (label == ignore_index) return false;
  if (label < 0 || label >= rows.c) bad_label(op, i, label, rows.c, ignore_index);
  return true;
}

Kernel forward_kernel(const KernelContext& ctx) {
  return [x = ctx.input<float>(0), labels = ctx.input<int32_t>(1), loss = ctx.output<float>(0),
          rows = rows_of(ctx.inputs[0]->shape), ignore = ctx.op.attrs.get_int("ignore_index"), name = ctx.op.name] {
    double total = 0.0;
    int64_t counted = 0;
    for (int64_t i = 0; i < rows.count; ++i) {
      if (!counts(name, labels, i, rows, ignore)) continue;
      const float* row = x + i * rows.c;
      const RowStats s = row_stats(row, rows.c);
      total += static_cast<double>((s.max - row[labels[i]]) + s.log_sum);  // max - x first: exact for close values
      ++counted;
    }
    *loss = counted == 0 ? 0.0f : static_cast<float>(total / static_cast<double>(counted));
  };
}

Kernel grad_kernel(const KernelContext& ctx) {
  return [x = ctx.input<float>(0), labels = ctx.input<int32_t>(1), dloss = ctx.input<float>(2),
          dx = ctx.output<float>(0), rows = rows_of(ctx.inputs[0]->shape),
          ignore = ctx.op.attrs.get_int("ignore_index"), name = ctx.op.name] {
    int64_t counted = 0;
    for (int64_t i = 0; i < rows.count; ++i) counted += counts(name, labels, i, rows, ignore) ? 1 : 0;
    const float scale = counted == 0 ? 0.0f : *dloss / static_cast<float>(counted);
    for (int64_t i = 0; i < rows.count; ++i) {
      const float* row = x + i * rows.c;
      float* drow = dx + i * rows.c;
      if (labels[i] == ignore) {
        std::fill(drow, drow + rows.c, 0.0f);
        continue;
      }
      const RowStats s = row_stats(row, rows.c);
      for (int64_t j = 0; j < rows.c; ++j) drow[j] = std::exp(row[j] - s.max - s.log_sum) * scale;
      drow[labels[i]] -= scale;
    }
  };
}

const std::vector<ir::AttrSpec> kIgnoreIndexAttr = {
    {"ignore_index", ir::AttrKind::Int, ir::AttrValue{int64_t{-100}}}};

OpDef loss_def() {
  OpDef d;
  d.name = "softmax_cross_entropy";
  d.min_inputs = d.max_inputs = 2;
  d.attrs = kIgnoreIndexAttr;
  d.infer = [](const ir::InferContext& ctx) {
    check_inputs(ctx);
    return ir::InferResult{{{DType::Float32, {}}}};
  };
  d.kernel = forward_kernel;
  d.grad = [](ir::GradContext& ctx) {
    return std::vector<TensorId>{
        ctx.add("softmax_cross_entropy_grad", {ctx.op.inputs[0], ctx.op.inputs[1], ctx.output_grads[0]},
                ctx.op.attrs),
        ir::kNoTensor};
  };
  return d;
}

OpDef grad_def() {
  OpDef d;
  d.name = "softmax_cross_entropy_grad";
  d.min_inputs = d.max_inputs = 3;
  d.attrs = kIgnoreIndexAttr;
  d.infer = [](const ir::InferContext& ctx) {
    check_inputs(ctx);
    ctx.expect_dtype(2, DType::Float32);
    if (ctx.rank(2) != 0) ctx.fail(ErrorCode::ShapeMismatch, "dloss must be a scalar");
    return ir::InferResult{{{DType::Float32, ctx.shape(0)}}};
  };
  d.kernel = grad_kernel;
  return d;
}

const OpRegistration loss_op{loss_def()};
const OpRegistration loss_grad_op{grad_def()};

}  // namespace

}  // namespace plexus::ops
