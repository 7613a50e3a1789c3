// Reductions over axes:
//   reduce_sum(x; axes, keepdims)   any number type; empty axes = all dims
//   reduce_mean(x; axes, keepdims)  float32 or float16
//   argmax(x; axis, keepdims)       index of the first maximum along one axis, int32
// float16 sums and means accumulate in float32 and round once (common/float32_compute.h);
// integer sums wrap around.
// Sums run in a fixed order, so results are deterministic. A contiguous row that sums into
// one output element (the inner H*W of NCHW -> C, the conv bias gradient; any reduction of
// trailing axes) goes through row_sum's independent partial sums, which vectorise.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <type_traits>

#include "core/ir/dtype_dispatch.h"
#include "core/ir/graph.h"
#include "core/ops/op_def.h"
#include "core/ops/common/float32_compute.h"
#include "core/ops/reduction/axis.h"
#include "core/ops/common/grad_helpers.h"
#include "core/ops/common/row_sum.h"
#include "core/ops/common/strided_loop.h"

namespace plexus::ops {

namespace {

using ir::DType;
using ir::ErrorCode;
using ir::TensorId;

// Which dims of `shape` the op reduces (validated, deduplicated).
std::vector<bool> reduced_dims(const std::string& op, const ir::Shape& shape, const std::vector<int64_t>& axes,
                               const ir::InferContext* ctx) {
  std::vector<bool> reduced(shape.size(), axes.empty());
  for (int64_t a : axes) {
    const int64_t axis = ir::normalize_axis(a, shape.size());
    if (axis < 0) {
      const std::string rule = "axis " + std::to_string(a) + " is out of range for rank " + std::to_string(shape.size());
      if (ctx) ctx->fail(ErrorCode::InvalidArgument, rule);
      ir::fail(ErrorCode::InvalidArgument, "op '" + op + "': " + rule);
    }
    reduced[axis] = true;
  }
  return reduced;
}

ir::Shape reduced_shape(const ir::Shape& shape, const std::vector<bool>& reduced, bool keepdims) {
  ir::Shape out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!reduced[d]) {
      out.push_back(shape[d]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  return out;
}

ir::InferResult infer_reduce(const ir::InferContext& ctx, bool float_only) {
  if (float_only) {
    ctx.expect_float(0);
  } else {
    ctx.expect_numeric(0);
  }
  const auto reduced = reduced_dims(ctx.op_name, ctx.shape(0), ctx.attrs.get_ints("axes"), &ctx);
  return {{{ctx.dtype(0), reduced_shape(ctx.shape(0), reduced, ctx.attrs.get_int("keepdims") != 0)}}};
}

template <class T>
Kernel reduce_kernel(const KernelContext& ctx, bool mean) {
  const ir::Shape& in_shape = ctx.inputs[0]->shape;
  const auto reduced = reduced_dims(ctx.op.name, in_shape, ctx.op.attrs.get_ints("axes"), nullptr);
  const std::vector<int64_t> kept = ir::row_major_strides(reduced_shape(in_shape, reduced, true));
  std::vector<int64_t> out_strides(in_shape.size());
  for (size_t d = 0; d < in_shape.size(); ++d) out_strides[d] = reduced[d] ? 0 : kept[d];
  const std::vector<int64_t> strides[2] = {ir::row_major_strides(in_shape), out_strides};
  const StridedLoop loop(in_shape, strides);
  const int64_t out_count = ir::numel(ctx.outputs[0]->shape);
  const T scale = mean ? static_cast<T>(1.0 / static_cast<double>(ir::numel(in_shape) / out_count)) : T{1};
  return [loop, x = ctx.input<T>(0), y = ctx.output<T>(0), out_count, mean, scale] {
    std::fill(y, y + out_count, T{0});
    loop.run([&](const auto& off, int64_t n, const auto& step) {
      const T* px = x + off[0];
      T* py = y + off[1];
      if (step[1] == 0) {  // the row (contiguous: the input is row-major) sums into *py
        *py = plus(*py, row_sum(px, n));
      } else {
        for (int64_t i = 0; i < n; ++i) py[i * step[1]] = plus(py[i * step[1]], px[i]);
      }
    });
    if (mean) {
      for (int64_t i = 0; i < out_count; ++i) y[i] *= scale;
    }
  };
}

// d reduce / dx: dy broadcast back over the reduced dims (scaled by 1/count for the mean).
std::vector<TensorId> reduce_grad(ir::GradContext& ctx, bool mean) {
  const ir::Shape in_shape = ctx.shape(ctx.op.inputs[0]);
  const auto reduced = reduced_dims(ctx.op.name, in_shape, ctx.op.attrs.get_ints("axes"), nullptr);
  ir::Attributes keep;
  const ir::Shape kept = reduced_shape(in_shape, reduced, true);
  keep.set("shape", std::vector<int64_t>(kept.begin(), kept.end()));
  ir::Attributes full;
  full.set("shape", std::vector<int64_t>(in_shape.begin(), in_shape.end()));
  TensorId dx = ctx.add("expand", {ctx.add("reshape", {ctx.output_grads[0]}, keep)}, full);
  if (mean) {
    const double count = static_cast<double>(ir::numel(in_shape) / ir::numel(kept));
    dx = ctx.add("mul", {dx, scalar_constant(ctx.graph, static_cast<float>(1.0 / count))});
  }
  return {dx};
}

OpDef reduce_def(const char* name, bool mean) {
  OpDef d;
  d.name = name;
  d.attrs = {{"axes", ir::AttrKind::Ints, ir::AttrValue{std::vector<int64_t>{}}},
             {"keepdims", ir::AttrKind::Int, ir::AttrValue{int64_t{0}}}};
  d.infer = [mean](const ir::InferContext& ctx) { return infer_reduce(ctx, mean); };
  d.kernel = [mean](const KernelContext& ctx) {
    return ir::visit_arithmetic(ctx.inputs[0]->dtype, [&](auto tag) -> Kernel {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, ir::Float16>) {  // accumulates in float32, rounds once
        return compute_in_float32(ctx, [mean](const KernelContext& c) { return reduce_kernel<float>(c, mean); });
      } else {
        return reduce_kernel<T>(ctx, mean && std::is_same_v<T, float>);
      }
    });
  };
  d.scratch = with_float32_copies(nullptr);
  d.grad = [mean](ir::GradContext& ctx) { return reduce_grad(ctx, mean); };
  return d;
}

// --- argmax --------------------------------------------------------------------------

template <class T>
Kernel argmax_kernel(const KernelContext& ctx, int64_t axis) {
  return [x = ctx.input<T>(0), y = ctx.output<int32_t>(0), split = split_at_axis(ctx.inputs[0]->shape, axis)] {
    int32_t* out = y;
    for_each_line(split, [&](int64_t start, auto stride) {
      const T* px = x + start;
      int32_t best = 0;
      for (int64_t k = 1; k < split.len; ++k) {
        if (ir::load(px[k * stride]) > ir::load(px[best * stride])) best = static_cast<int32_t>(k);
      }
      *out++ = best;
    });
  };
}

OpDef argmax_def() {
  OpDef d;
  d.name = "argmax";
  d.attrs = {{"axis", ir::AttrKind::Int, ir::AttrValue{int64_t{-1}}},
             {"keepdims", ir::AttrKind::Int, ir::AttrValue{int64_t{0}}}};
  d.infer = [](const ir::InferContext& ctx) {
    ctx.expect_numeric(0);
    if (ctx.rank(0) == 0) ctx.fail(ErrorCode::ShapeMismatch, "input must have rank >= 1");
    const int64_t axis = checked_axis(ctx, ctx.attrs.get_int("axis"));
    std::vector<bool> reduced(ctx.rank(0), false);
    reduced[axis] = true;
    return ir::InferResult{{{DType::Int32, reduced_shape(ctx.shape(0), reduced, ctx.attrs.get_int("keepdims") != 0)}}};
  };
  d.kernel = [](const KernelContext& ctx) -> Kernel {
    const int64_t axis = ir::normalize_axis(ctx.op.attrs.get_int("axis"), ctx.inputs[0]->shape.size());
    return ir::visit_arithmetic(ctx.inputs[0]->dtype,
                                [&](auto tag) { return argmax_kernel<typename decltype(tag)::type>(ctx, axis); });
  };
  return d;
}

const OpRegistration reduce_sum_op{reduce_def("reduce_sum", false)};
const OpRegistration reduce_mean_op{reduce_def("reduce_mean", true)};
const OpRegistration argmax_op{argmax_def()};

}  // namespace

}  // namespace plexus::ops
