// Ops that join tensors or cut boxes out of them (any dtype; elements are copied as bytes):
//   concat(x0, x1, ...; axis=0)       1 to kMaxConcatInputs inputs of one dtype and rank >= 1,
//                                     equal dims except along axis (in [-rank, rank)); the
//                                     inputs one after the other along axis (numpy
//                                     concatenate, PyTorch torch.cat, ONNX Concat).
//                                     grad: dy sliced back into each input's part
//   split(x; sizes, axis=0)           the inverse: one output per entry of sizes (each >= 1,
//                                     summing to x's dim along axis), numpy split at the
//                                     cumulative sizes (PyTorch torch.split with a list,
//                                     ONNX Split). grad: concat of the outputs' gradients
//                                     (zeros for an output without one)
//   slice(x; starts, ends, axes=[])   x[starts:ends] along each of axes (empty = 0, 1, ...),
//                                     step 1 (ONNX Slice without steps; numpy basic slicing):
//                                     a negative start or end counts from the end of the dim,
//                                     then both are clamped to [0, dim] like numpy. An empty
//                                     result is a shape error (tensors have dims >= 1).
//                                     grad: slice_grad
//   slice_grad(dy; shape, starts)     zeros of `shape` with dy written at offset `starts`
//                                     (one start per dim; the ONNX Pad of the slice's box).
#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/ir/graph.h"
#include "core/ops/op_def.h"
#include "core/ops/common/strided_loop.h"

namespace plexus::ops {

namespace {

using ir::ErrorCode;
using ir::TensorId;

constexpr size_t kMaxConcatInputs = 64;

ir::Attributes ints_attrs(std::initializer_list<std::pair<const char*, std::vector<int64_t>>> values) {
  ir::Attributes attrs;
  for (const auto& [name, v] : values) attrs.set(name, v);
  return attrs;
}

// axis normalised for `rank`, or a failure naming the range.
size_t checked_axis(const ir::InferContext& ctx, int64_t axis, size_t rank) {
  const int64_t a = ir::normalize_axis(axis, rank);
  if (a < 0) {
    const std::string r = std::to_string(rank);
    ctx.fail(ErrorCode::InvalidArgument,
             "axis " + std::to_string(axis) + " must be in [-" + r + ", " + r + ") for rank " + r);
  }
  return static_cast<size_t>(a);
}

// --- concat and split: parts laid one after the other along an axis ----------------

// A tensor `whole` seen as [outer, parts...] rows: along `axis`, part k covers bytes
// [offset[k], offset[k] + row[k]) of each of the `outer` rows of `whole_row` bytes.
struct PartLayout {
  int64_t outer = 1;
  size_t whole_row = 0;
  std::vector<size_t> row, offset;

  PartLayout(const ir::Shape& whole, size_t axis, const std::vector<int64_t>& sizes, size_t esize) {
    outer = ir::numel(std::span(whole).first(axis));
    const size_t inner = static_cast<size_t>(ir::numel(std::span(whole).subspan(axis + 1))) * esize;
    for (int64_t s : sizes) {
      offset.push_back(whole_row);
      row.push_back(static_cast<size_t>(s) * inner);
      whole_row += row.back();
    }
  }

  // Copies every part into `whole` (concat) or out of it (split).
  void copy(std::byte* whole, const std::vector<std::byte*>& parts, bool into_whole) const {
    for (int64_t o = 0; o < outer; ++o) {
      std::byte* w = whole + static_cast<size_t>(o) * whole_row;
      for (size_t k = 0; k < parts.size(); ++k) {
        std::byte* p = parts[k] + static_cast<size_t>(o) * row[k];
        if (into_whole) {
          std::memcpy(w + offset[k], p, row[k]);
        } else {
          std::memcpy(p, w + offset[k], row[k]);
        }
      }
    }
  }
};

int64_t concat_axis(const ir::Shape& shape, const ir::Attributes& attrs) {
  return ir::normalize_axis(attrs.get_int("axis"), shape.size());
}

ir::InferResult infer_concat(const ir::InferContext& ctx) {
  const ir::Shape& first = ctx.shape(0);
  if (first.empty()) ctx.fail(ErrorCode::ShapeMismatch, "inputs must have rank >= 1");
  const size_t axis = checked_axis(ctx, ctx.attrs.get_int("axis"), first.size());
  ir::Shape out = first;
  for (size_t i = 1; i < ctx.inputs.size(); ++i) {
    if (ctx.dtype(i) != ctx.dtype(0)) ctx.fail(ErrorCode::DTypeMismatch, "all inputs must have one dtype");
    ir::Shape s = ctx.shape(i);
    if (s.size() == first.size()) {
      out[axis] += s[axis];
      s[axis] = first[axis];
    }
    if (s != first) {
      ctx.fail(ErrorCode::ShapeMismatch,
               "input " + std::to_string(i) + " must have input 0's shape except along axis " + std::to_string(axis));
    }
  }
  return {{{ctx.dtype(0), out}}};
}

std::vector<int64_t> sizes_along(const std::vector<const ir::TensorInfo*>& tensors, size_t axis) {
  std::vector<int64_t> sizes;
  for (const ir::TensorInfo* t : tensors) sizes.push_back(t->shape[axis]);
  return sizes;
}

Kernel concat_kernel(const KernelContext& ctx) {
  const ir::TensorInfo& y = *ctx.outputs[0];
  const auto axis = static_cast<size_t>(concat_axis(y.shape, ctx.op.attrs));
  const PartLayout layout(y.shape, axis, sizes_along(ctx.inputs, axis), ir::dtype_size(y.dtype));
  std::vector<std::byte*> parts(ctx.in.begin(), ctx.in.end());
  return [layout, parts, out = ctx.out[0]] { layout.copy(out, parts, true); };
}

// dy along `axis` cut into parts of `sizes`; kNoTensor where `wanted` is false.
std::vector<TensorId> slices_along(ir::GradContext& ctx, TensorId dy, int64_t axis, const std::vector<int64_t>& sizes,
                                   const std::vector<bool>& wanted) {
  std::vector<TensorId> grads;
  int64_t start = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    grads.push_back(
        wanted[k]
            ? ctx.add("slice", {dy}, ints_attrs({{"starts", {start}}, {"ends", {start + sizes[k]}}, {"axes", {axis}}}))
            : ir::kNoTensor);
    start += sizes[k];
  }
  return grads;
}

OpDef concat_def() {
  OpDef d;
  d.name = "concat";
  d.min_inputs = 1;
  d.max_inputs = kMaxConcatInputs;
  d.attrs = {{"axis", ir::AttrKind::Int, ir::AttrValue{int64_t{0}}}};
  d.infer = infer_concat;
  d.kernel = concat_kernel;
  d.grad = [](ir::GradContext& ctx) {
    const int64_t axis = concat_axis(ctx.shape(ctx.op.outputs[0]), ctx.op.attrs);
    std::vector<int64_t> sizes;
    for (TensorId x : ctx.op.inputs) sizes.push_back(ctx.shape(x)[static_cast<size_t>(axis)]);
    return slices_along(ctx, ctx.output_grads[0], axis, sizes, ctx.needs_grad);
  };
  return d;
}

ir::InferResult infer_split(const ir::InferContext& ctx) {
  if (ctx.rank(0) == 0) ctx.fail(ErrorCode::ShapeMismatch, "x must have rank >= 1");
  const size_t axis = checked_axis(ctx, ctx.attrs.get_int("axis"), ctx.rank(0));
  const std::vector<int64_t>& sizes = ctx.attrs.get_ints("sizes");
  const bool positive = std::all_of(sizes.begin(), sizes.end(), [](int64_t s) { return s >= 1; });
  if (sizes.empty() || !positive || std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != ctx.shape(0)[axis]) {
    ctx.fail(ErrorCode::ShapeMismatch, "sizes " + ir::shape_string(sizes) + " must be >= 1 each and sum to " +
                                           std::to_string(ctx.shape(0)[axis]) + " (dim " + std::to_string(axis) + ")");
  }
  ir::InferResult r;
  for (int64_t s : sizes) {
    ir::Shape shape = ctx.shape(0);
    shape[axis] = s;
    r.outputs.push_back({ctx.dtype(0), shape});
  }
  return r;
}

Kernel split_kernel(const KernelContext& ctx) {
  const ir::TensorInfo& x = *ctx.inputs[0];
  const auto axis = static_cast<size_t>(concat_axis(x.shape, ctx.op.attrs));
  const PartLayout layout(x.shape, axis, ctx.op.attrs.get_ints("sizes"), ir::dtype_size(x.dtype));
  return [layout, parts = ctx.out, in = ctx.in[0]] { layout.copy(in, parts, false); };
}

// concat of the outputs' gradients, zeros standing in for outputs that have none.
std::vector<TensorId> split_grad(ir::GradContext& ctx) {
  std::vector<TensorId> parts;
  for (size_t k = 0; k < ctx.op.outputs.size(); ++k) {
    TensorId g = ctx.output_grads[k];
    if (g == ir::kNoTensor) {
      const ir::Shape shape = ctx.shape(ctx.op.outputs[k]);
      g = ctx.graph.add_constant(ir::DType::Float32, shape,
                                 std::vector<std::byte>(static_cast<size_t>(ir::numel(shape)) * sizeof(float)));
    }
    parts.push_back(g);
  }
  ir::Attributes attrs;
  attrs.set("axis", ctx.op.attrs.get_int("axis"));
  return {ctx.add("concat", parts, attrs)};
}

OpDef split_def() {
  OpDef d;
  d.name = "split";
  // sizes first, as torch.split(x, sizes, dim) takes them.
  d.attrs = {{"sizes", ir::AttrKind::Ints, std::nullopt}, {"axis", ir::AttrKind::Int, ir::AttrValue{int64_t{0}}}};
  d.infer = infer_split;
  d.kernel = split_kernel;
  d.grad = split_grad;
  return d;
}

// --- slice and slice_grad: a box of a tensor --------------------------------------------

// The box [begin, begin + shape) that slice(x; starts, ends, axes) cuts from x, or the rule
// its attributes break (`error` non-empty).
struct Box {
  std::vector<int64_t> begin;
  ir::Shape shape;
  std::string error;
};

Box slice_box(const ir::Shape& x, const ir::Attributes& attrs) {
  const std::vector<int64_t>&starts = attrs.get_ints("starts"), &ends = attrs.get_ints("ends");
  std::vector<int64_t> axes = attrs.get_ints("axes");
  if (axes.empty()) {
    axes.resize(std::min(starts.size(), x.size()));
    std::iota(axes.begin(), axes.end(), 0);
  }
  Box box{std::vector<int64_t>(x.size(), 0), x, {}};
  if (starts.size() != axes.size() || ends.size() != axes.size()) {
    box.error = "starts, ends and axes (empty = 0, 1, ...) must have one length, within the rank";
    return box;
  }
  std::vector<bool> seen(x.size(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = ir::normalize_axis(axes[i], x.size());
    if (a < 0 || seen[static_cast<size_t>(a)]) {
      box.error = "axes " + ir::shape_string(axes) + " must be distinct dims in [-rank, rank)";
      return box;
    }
    seen[static_cast<size_t>(a)] = true;
    const int64_t dim = x[static_cast<size_t>(a)];
    auto clamp = [dim](int64_t v) { return std::clamp(v < 0 ? v + dim : v, int64_t{0}, dim); };
    const int64_t b = clamp(starts[i]), e = clamp(ends[i]);
    if (e <= b) {
      box.error = "the slice [" + std::to_string(starts[i]) + ", " + std::to_string(ends[i]) + ") of dim " +
                  std::to_string(a) + " (size " + std::to_string(dim) + ") is empty";
      return box;
    }
    box.begin[static_cast<size_t>(a)] = b;
    box.shape[static_cast<size_t>(a)] = e - b;
  }
  return box;
}

// Copies between a box of a row-major tensor `big` (shape `big_shape`) at `begin` and a
// contiguous tensor `small` of the box's shape; `into_big` picks the direction.
Kernel box_copy(const ir::Shape& big_shape, const std::vector<int64_t>& begin, const ir::Shape& box, size_t esize,
                    std::byte* big, std::byte* small, bool into_big) {
  const std::vector<int64_t> big_strides = ir::row_major_strides(big_shape);
  int64_t base = 0;
  for (size_t d = 0; d < begin.size(); ++d) base += begin[d] * big_strides[d];
  const std::vector<int64_t> strides[2] = {ir::row_major_strides(box), big_strides};
  const StridedLoop loop(box, strides);
  return [loop, big = big + base * static_cast<int64_t>(esize), small, esize, into_big] {
    loop.run([&](const auto& off, int64_t n, const auto&) {  // the box's rows are contiguous in both
      std::byte* s = small + off[0] * static_cast<int64_t>(esize);
      std::byte* b = big + off[1] * static_cast<int64_t>(esize);
      if (into_big) {
        std::memcpy(b, s, static_cast<size_t>(n) * esize);
      } else {
        std::memcpy(s, b, static_cast<size_t>(n) * esize);
      }
    });
  };
}

OpDef slice_def() {
  OpDef d;
  d.name = "slice";
  d.attrs = {{"starts", ir::AttrKind::Ints, std::nullopt},
             {"ends", ir::AttrKind::Ints, std::nullopt},
             {"axes", ir::AttrKind::Ints, ir::AttrValue{std::vector<int64_t>{}}}};
  d.infer = [](const ir::InferContext& ctx) {
    Box box = slice_box(ctx.shape(0), ctx.attrs);
    if (!box.error.empty()) ctx.fail(ErrorCode::InvalidArgument, box.error);
    return ir::InferResult{{{ctx.dtype(0), box.shape}}};
  };
  d.kernel = [](const KernelContext& ctx) {
    const ir::TensorInfo& x = *ctx.inputs[0];
    const Box box = slice_box(x.shape, ctx.op.attrs);
    return box_copy(x.shape, box.begin, box.shape, ir::dtype_size(x.dtype), ctx.in[0], ctx.out[0], false);
  };
  d.grad = [](ir::GradContext& ctx) {
    const ir::Shape x = ctx.shape(ctx.op.inputs[0]);
    const Box box = slice_box(x, ctx.op.attrs);
    return std::vector<TensorId>{
        ctx.add("slice_grad", {ctx.output_grads[0]}, ints_attrs({{"shape", x}, {"starts", box.begin}}))};
  };
  return d;
}

OpDef slice_grad_def() {
  OpDef d;
  d.name = "slice_grad";
  d.attrs = {{"shape", ir::AttrKind::Ints, std::nullopt}, {"starts", ir::AttrKind::Ints, std::nullopt}};
  d.infer = [](const ir::InferContext& ctx) {
    const ir::Shape &shape = ctx.attrs.get_ints("shape"), &starts = ctx.attrs.get_ints("starts"), &dy = ctx.shape(0);
    ir::check_shape(shape, "op 'slice_grad': attribute 'shape'");
    bool fits = shape.size() == dy.size() && starts.size() == dy.size();
    for (size_t i = 0; fits && i < dy.size(); ++i) fits = starts[i] >= 0 && starts[i] + dy[i] <= shape[i];
    if (!fits) {
      ctx.fail(ErrorCode::ShapeMismatch,
               "dy at starts " + ir::shape_string(starts) + " must lie inside shape " + ir::shape_string(shape));
    }
    return ir::InferResult{{{ctx.dtype(0), shape}}};
  };
  d.kernel = [](const KernelContext& ctx) {
    const ir::TensorInfo& out = *ctx.outputs[0];
    const Kernel copy = box_copy(out.shape, ctx.op.attrs.get_ints("starts"), ctx.inputs[0]->shape,
                                     ir::dtype_size(out.dtype), ctx.out[0], ctx.in[0], true);
    return Kernel([copy, out = ctx.out[0], bytes = out.bytes()] {
      std::memset(out, 0, bytes);
      copy();
    });
  };
  return d;
}

const OpRegistration concat_op{concat_def()};
const OpRegistration split_op{split_def()};
const OpRegistration slice_op{slice_def()};
const OpRegistration slice_grad_op{slice_grad_def()};

}  // namespace

}  // namespace plexus::ops
