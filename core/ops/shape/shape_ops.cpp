// Ops that rearrange elements without arithmetic:
//   reshape(x; shape)   view of x's buffer (no copy); one dim may be -1 (inferred)
//   transpose(x; perm)  permutes dims; empty perm reverses them (numpy's default)
//   expand(x; shape)    numpy broadcast_to
//   alias(x)            view of x under another tensor (the relu-epilogue rewrite makes it)
//   flatten(x; axis=1)  [prod(dims < axis), prod(dims >= axis)], a view like reshape (ONNX
//                       Flatten; PyTorch's x.view(N, -1) for axis 1); axis in [-rank, rank]
#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/ir/graph.h"
#include "core/ops/op_def.h"
#include "core/ops/common/grad_helpers.h"
#include "core/ops/common/strided_loop.h"

namespace plexus::ops {

namespace {

using ir::ErrorCode;
using ir::TensorId;

std::string ints_string(const std::vector<int64_t>& v) { return ir::shape_string(v); }

// --- reshape -----------------------------------------------------------------------

ir::InferResult infer_reshape(const ir::InferContext& ctx) {
  ir::Shape out = ctx.attrs.get_ints("shape");
  const int64_t count = ir::numel(ctx.shape(0));
  int64_t known = 1;
  int inferred = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1 && inferred < 0) {
      inferred = static_cast<int>(i);
    } else if (out[i] < 1) {
      ctx.fail(ErrorCode::ShapeMismatch, "target shape " + ints_string(out) + " may hold one -1 and dims >= 1 only");
    } else if (__builtin_mul_overflow(known, out[i], &known)) {
      ctx.fail(ErrorCode::ShapeMismatch, "cannot reshape " + std::to_string(count) + " elements to " +
                                             ints_string(ctx.attrs.get_ints("shape")));
    }
  }
  if (inferred >= 0 && known > 0 && count % known == 0) out[inferred] = count / known;
  if (ir::numel(out) != count || out.size() > ir::kMaxRank) {
    ctx.fail(ErrorCode::ShapeMismatch, "cannot reshape " + std::to_string(count) + " elements to " +
                                           ints_string(ctx.attrs.get_ints("shape")));
  }
  return {{{ctx.dtype(0), out}}};
}

ir::Attributes shape_attr(const ir::Shape& shape) {
  ir::Attributes a;
  a.set("shape", std::vector<int64_t>(shape.begin(), shape.end()));
  return a;
}

// Gradient of the views that only change the shape (reshape, flatten): dy reshaped back
// to the input's shape.
std::vector<TensorId> reshape_back(ir::GradContext& ctx) {
  return {ctx.add("reshape", {ctx.output_grads[0]}, shape_attr(ctx.shape(ctx.op.inputs[0])))};
}

OpDef reshape_def() {
  OpDef d;
  d.name = "reshape";
  d.attrs = {{"shape", ir::AttrKind::Ints, std::nullopt}};
  d.infer = infer_reshape;
  d.is_view = true;
  d.kernel = [](const KernelContext&) { return Kernel{}; };
  d.grad = reshape_back;
  return d;
}

// --- alias ---------------------------------------------------------------------------

// alias(x) -> x's storage under another tensor: what the relu-epilogue rewrite
// (core/compile/relu_fusion.h) makes of a relu whose producer now applies it.
OpDef alias_def() {
  OpDef d;
  d.name = "alias";
  d.infer = [](const ir::InferContext& ctx) { return ir::InferResult{{{ctx.dtype(0), ctx.shape(0)}}}; };
  d.is_view = true;
  d.kernel = [](const KernelContext&) { return Kernel{}; };
  d.grad = reshape_back;
  return d;
}

// --- flatten -------------------------------------------------------------------------

OpDef flatten_def() {
  OpDef d;
  d.name = "flatten";
  d.attrs = {{"axis", ir::AttrKind::Int, ir::AttrValue{int64_t{1}}}};
  d.infer = [](const ir::InferContext& ctx) {
    const auto rank = static_cast<int64_t>(ctx.rank(0));
    int64_t axis = ctx.attrs.get_int("axis");
    if (axis < -rank || axis > rank) {
      ctx.fail(ErrorCode::InvalidArgument, "axis " + std::to_string(axis) + " must be in [-" + std::to_string(rank) +
                                               ", " + std::to_string(rank) + "] for rank " + std::to_string(rank));
    }
    if (axis < 0) axis += rank;
    const ir::Shape& s = ctx.shape(0);
    const int64_t outer = ir::numel(std::span<const int64_t>(s.data(), static_cast<size_t>(axis)));
    return ir::InferResult{{{ctx.dtype(0), {outer, ir::numel(s) / outer}}}};
  };
  d.is_view = true;
  d.kernel = [](const KernelContext&) { return Kernel{}; };
  d.grad = reshape_back;
  return d;
}

// --- strided copies (transpose, expand) ---------------------------------------------

// out[i] = in[strided offset of i], out contiguous.
Kernel strided_copy(const KernelContext& ctx, const std::vector<int64_t>& in_strides) {
  const ir::Shape& shape = ctx.outputs[0]->shape;
  const std::vector<int64_t> strides[2] = {ir::row_major_strides(shape), in_strides};
  const StridedLoop loop(shape, strides);
  const size_t esize = ir::dtype_size(ctx.outputs[0]->dtype);
  return [loop, in = ctx.in[0], out = ctx.out[0], esize] {
    loop.run([&](const auto& off, int64_t n, const auto& step) {
      std::byte* o = out + off[0] * esize;
      const std::byte* i = in + off[1] * esize;
      if (step[1] == 1) {
        std::memcpy(o, i, static_cast<size_t>(n) * esize);
      } else {
        for (int64_t k = 0; k < n; ++k) std::memcpy(o + k * esize, i + k * step[1] * esize, esize);
      }
    });
  };
}

// The permutation `perm_attr` stands for on `rank` dims (empty = reversed dims), or an
// empty vector when it is not a permutation of 0..rank-1.
std::vector<int64_t> permutation(const std::vector<int64_t>& perm_attr, size_t rank) {
  std::vector<int64_t> perm = perm_attr;
  if (perm.empty()) {
    perm.resize(rank);
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(rank);
  std::iota(identity.begin(), identity.end(), 0);
  return sorted == identity ? perm : std::vector<int64_t>{};
}

OpDef transpose_def() {
  OpDef d;
  d.name = "transpose";
  d.attrs = {{"perm", ir::AttrKind::Ints, ir::AttrValue{std::vector<int64_t>{}}}};
  d.infer = [](const ir::InferContext& ctx) {
    const std::vector<int64_t> perm = permutation(ctx.attrs.get_ints("perm"), ctx.rank(0));
    if (perm.empty() && ctx.rank(0) > 0) {
      ctx.fail(ErrorCode::InvalidArgument, "perm " + ints_string(ctx.attrs.get_ints("perm")) +
                                               " is not a permutation of the " + std::to_string(ctx.rank(0)) + " dims");
    }
    ir::Shape out;
    for (int64_t p : perm) out.push_back(ctx.shape(0)[p]);
    return ir::InferResult{{{ctx.dtype(0), out}}};
  };
  d.kernel = [](const KernelContext& ctx) {
    const std::vector<int64_t> perm = permutation(ctx.op.attrs.get_ints("perm"), ctx.inputs[0]->shape.size());
    const std::vector<int64_t> in_strides = ir::row_major_strides(ctx.inputs[0]->shape);
    std::vector<int64_t> strides;
    for (int64_t p : perm) strides.push_back(in_strides[p]);
    return strided_copy(ctx, strides);
  };
  d.grad = [](ir::GradContext& ctx) {
    const std::vector<int64_t> perm = permutation(ctx.op.attrs.get_ints("perm"), ctx.shape(ctx.op.inputs[0]).size());
    std::vector<int64_t> inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
    ir::Attributes attrs;
    attrs.set("perm", inverse);
    return std::vector<TensorId>{ctx.add("transpose", {ctx.output_grads[0]}, attrs)};
  };
  return d;
}

OpDef expand_def() {
  OpDef d;
  d.name = "expand";
  d.attrs = {{"shape", ir::AttrKind::Ints, std::nullopt}};
  d.infer = [](const ir::InferContext& ctx) {
    const ir::Shape target = ctx.attrs.get_ints("shape");
    ir::Shape out;
    if (!ir::broadcast_shapes(ctx.shape(0), target, out) || out != target) {
      ctx.fail(ErrorCode::ShapeMismatch, "cannot broadcast to " + ints_string(target));
    }
    return ir::InferResult{{{ctx.dtype(0), out}}};
  };
  d.kernel = [](const KernelContext& ctx) {
    return strided_copy(ctx, broadcast_strides(ctx.inputs[0]->shape, ctx.outputs[0]->shape));
  };
  d.grad = [](ir::GradContext& ctx) {
    return std::vector<TensorId>{unbroadcast(ctx, ctx.output_grads[0], ctx.shape(ctx.op.inputs[0]))};
  };
  return d;
}

const OpRegistration reshape_op{reshape_def()};
const OpRegistration alias_op{alias_def()};
const OpRegistration transpose_op{transpose_def()};
const OpRegistration expand_op{expand_def()};
const OpRegistration flatten_op{flatten_def()};

}  // namespace

}  // namespace plexus::ops
