// Row lookup (embedding):
//   gather(table [V, D...], indices int32 [I...]) -> [I..., D...]
//     out[i..., :] = table[indices[i...], :]   (PyTorch F.embedding(indices, table),
//     numpy / PyTorch table[indices], ONNX Gather with axis 0). The table may have any
//     dtype (rows are copied as bytes); its gradient exists for float32 only.
//   gather_grad(indices int32 [I...], dy float32 [I..., D...]; num_rows) -> float32 [num_rows, D...]
//     zeros with dy's rows added at their indices (scatter-add: a row hit twice
//     accumulates; PyTorch's embedding backward, ONNX ScatterElements with reduction "add").
// An index outside [0, V) is a run error (PLX_ERR_RUNTIME) naming the op, the index and
// its position in `indices`. Indices get no gradient.
#include <algorithm>
#include <cstring>
#include <span>

#include "core/ir/graph.h"
#include "core/ops/op_def.h"

namespace plexus::ops {

namespace {

using ir::DType;
using ir::ErrorCode;
using ir::TensorId;

// "[1,2]": the multi-index of flat position `flat` in `shape` (for messages).
std::string position_string(int64_t flat, const ir::Shape& shape) {
  ir::Shape index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return ir::shape_string(index);
}

// Row `flat` of `indices`, checked to be in [0, rows).
struct IndexChecker {
  std::string op;
  ir::Shape indices_shape;
  int64_t rows;

  int64_t operator()(const int32_t* indices, int64_t flat) const {
    const int32_t v = indices[flat];
    if (v < 0 || v >= rows) fail_at(v, flat);
    return v;
  }

  [[noreturn, gnu::cold]] void fail_at(int32_t v, int64_t flat) const {
    ir::fail(ErrorCode::Runtime, "op '" + op + "': index " + std::to_string(v) + " at position " +
                                     position_string(flat, indices_shape) + " of the indices is outside [0, " +
                                     std::to_string(rows) + ")");
  }
};

// [I..., D...] from the indices' shape and a row shape D... (checked against kMaxRank).
ir::Shape gathered_shape(const ir::InferContext& ctx, const ir::Shape& indices, std::span<const int64_t> row) {
  ir::Shape out = indices;
  out.insert(out.end(), row.begin(), row.end());
  if (out.size() > ir::kMaxRank) {
    ctx.fail(ErrorCode::ShapeMismatch, "the output's rank " + std::to_string(out.size()) +
                                           " (indices' rank + table's "
                                           "rank - 1) exceeds " +
                                           std::to_string(ir::kMaxRank));
  }
  return out;
}

ir::InferResult infer_gather(const ir::InferContext& ctx) {
  ctx.expect_dtype(1, DType::Int32);
  if (ctx.rank(0) < 1) ctx.fail(ErrorCode::ShapeMismatch, "the table must have rank >= 1 ([V, D...])");
  const ir::Shape& table = ctx.shape(0);
  return {{{ctx.dtype(0), gathered_shape(ctx, ctx.shape(1), std::span(table).subspan(1))}}};
}

Kernel gather_kernel(const KernelContext& ctx) {
  const ir::TensorInfo& table = *ctx.inputs[0];
  const size_t row_bytes = table.bytes() / static_cast<size_t>(table.shape[0]);
  const IndexChecker check{ctx.op.name, ctx.inputs[1]->shape, table.shape[0]};
  return [check, row_bytes, count = ir::numel(ctx.inputs[1]->shape), t = ctx.in[0], indices = ctx.input<int32_t>(1),
          out = ctx.out[0]] {
    for (int64_t p = 0; p < count; ++p) {
      std::memcpy(out + static_cast<size_t>(p) * row_bytes, t + static_cast<size_t>(check(indices, p)) * row_bytes,
                  row_bytes);
    }
  };
}

OpDef gather_def() {
  OpDef d;
  d.name = "gather";
  d.min_inputs = d.max_inputs = 2;
  d.infer = infer_gather;
  d.kernel = gather_kernel;
  d.grad = [](ir::GradContext& ctx) {
    ir::Attributes attrs;
    attrs.set("num_rows", ctx.shape(ctx.op.inputs[0])[0]);
    return std::vector<TensorId>{ctx.add("gather_grad", {ctx.op.inputs[1], ctx.output_grads[0]}, attrs), ir::kNoTensor};
  };
  return d;
}

ir::InferResult infer_gather_grad(const ir::InferContext& ctx) {
  ctx.expect_dtype(0, DType::Int32);
  ctx.expect_dtype(1, DType::Float32);
  const ir::Shape &indices = ctx.shape(0), &dy = ctx.shape(1);
  if (dy.size() < indices.size() || !std::equal(indices.begin(), indices.end(), dy.begin())) {
    ctx.fail(ErrorCode::ShapeMismatch, "dy's shape must start with the indices' shape ([I..., D...])");
  }
  const int64_t rows = ctx.attrs.get_int("num_rows");
  if (rows < 1) ctx.fail(ErrorCode::InvalidArgument, "num_rows " + std::to_string(rows) + " must be >= 1");
  ir::Shape out{rows};
  out.insert(out.end(), dy.begin() + static_cast<std::ptrdiff_t>(indices.size()), dy.end());
  return {{{DType::Float32, out}}};
}

Kernel gather_grad_kernel(const KernelContext& ctx) {
  const ir::TensorInfo& dtable = *ctx.outputs[0];
  const int64_t row = ir::numel(dtable.shape) / dtable.shape[0];
  const IndexChecker check{ctx.op.name, ctx.inputs[0]->shape, dtable.shape[0]};
  return [check, row, count = ir::numel(ctx.inputs[0]->shape), total = ir::numel(dtable.shape),
          indices = ctx.input<int32_t>(0), dy = ctx.input<float>(1), out = ctx.output<float>(0)] {
    std::fill(out, out + total, 0.0f);
    for (int64_t p = 0; p < count; ++p) {
      float* dst = out + check(indices, p) * row;
      const float* src = dy + p * row;
      for (int64_t j = 0; j < row; ++j) dst[j] += src[j];
    }
  };
}

OpDef gather_grad_def() {
  OpDef d;
  d.name = "gather_grad";
  d.min_inputs = d.max_inputs = 2;
  d.attrs = {{"num_rows", ir::AttrKind::Int, std::nullopt}};
  d.infer = infer_gather_grad;
  d.kernel = gather_grad_kernel;
  return d;
}

const OpRegistration gather_op{gather_def()};
const OpRegistration gather_grad_op{gather_grad_def()};

}  // namespace

}  // namespace plexus::ops
