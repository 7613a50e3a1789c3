// Binary elementwise ops with numpy broadcasting: add, sub, mul, div (float32, float16,
// int32, int8, uint8 or uint32, both inputs of one dtype), add_ (in place: x <- x + y, y
// broadcast to x, PopXL's `x += y`), copy_var_update_ (in place: x <- y, PopXL's
// var_updates.copy_var_update_), and equal (any dtype, uint8 result). float16 is computed
// in float32 and rounded once per element (ir::load / ir::store). Integer arithmetic wraps
// around like two's complement hardware; integer division truncates toward zero and
// division by zero is a run error.
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/ir/dtype_dispatch.h"
#include "core/ir/graph.h"
#include "core/ops/op_def.h"
#include "core/ops/common/grad_helpers.h"
#include "core/ops/common/strided_loop.h"
#include "core/ops/common/vector_clones.h"

namespace plexus::ops {

namespace {

using ir::DType;
using ir::ErrorCode;
using ir::TensorId;

ir::InferResult infer_broadcast(const ir::InferContext& ctx, DType out_dtype) {
  if (ctx.dtype(0) != ctx.dtype(1)) ctx.fail(ErrorCode::DTypeMismatch, "both inputs must have the same dtype");
  ir::Shape out;
  if (!ir::broadcast_shapes(ctx.shape(0), ctx.shape(1), out)) {
    ctx.fail(ErrorCode::ShapeMismatch, "shapes are not broadcast-compatible (numpy rules: trailing dims must be "
                                       "equal or 1)");
  }
  return {{{out_dtype, out}}};
}

/// One row of n outputs po[i] = f(pa[i * sa], pb[i * sb]), with the contiguous and
/// broadcast-scalar cases as their own loops so that they vectorise.
template <class T, class Out, class F>
PLEXUS_VECTOR_CLONES void binary_row(Out* po, const T* pa, const T* pb, int64_t n, int64_t sa, int64_t sb, F f) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) po[i] = ir::store<Out>(f(ir::load(pa[i]), ir::load(pb[i])));
  } else if (sa == 0 && sb == 1) {
    const auto av = ir::load(*pa);
    for (int64_t i = 0; i < n; ++i) po[i] = ir::store<Out>(f(av, ir::load(pb[i])));
  } else if (sa == 1 && sb == 0) {
    const auto bv = ir::load(*pb);
    for (int64_t i = 0; i < n; ++i) po[i] = ir::store<Out>(f(ir::load(pa[i]), bv));
  } else {
    for (int64_t i = 0; i < n; ++i) po[i] = ir::store<Out>(f(ir::load(pa[i * sa]), ir::load(pb[i * sb])));
  }
}

template <class T, class Out, class F>
Kernel binary_kernel(const KernelContext& ctx, F f) {
  const ir::Shape& out_shape = ctx.outputs[0]->shape;
  const std::vector<int64_t> strides[3] = {ir::row_major_strides(out_shape),
                                           broadcast_strides(ctx.inputs[0]->shape, out_shape),
                                           broadcast_strides(ctx.inputs[1]->shape, out_shape)};
  const StridedLoop loop(out_shape, strides);
  return [loop, a = ctx.input<T>(0), b = ctx.input<T>(1), o = ctx.output<Out>(0), f] {
    loop.run([&](const auto& off, int64_t n, const auto& step) {
      binary_row(o + off[0], a + off[1], b + off[2], n, step[1], step[2], f);
    });
  };
}

// v modulo 2^bits of T, as T (two's complement wrap-around; C++20 defines the conversion).
template <class T>
T wrap(uint64_t v) {
  return static_cast<T>(v);
}

template <class T>
uint64_t u64(T v) {
  return static_cast<uint64_t>(v);
}

// One arithmetic op: the float element function (float32, and float16 through float32), the
// integer one (generic over the integer types) and its gradient rule.
template <class FloatFn, class IntFn>
OpDef arithmetic(const char* name, FloatFn float_fn, IntFn int_fn,
                     std::function<std::vector<TensorId>(ir::GradContext&)> grad) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](const ir::InferContext& ctx) {
    ctx.expect_numeric(0);
    return infer_broadcast(ctx, ctx.dtype(0));
  };
  def.kernel = [float_fn, int_fn](const KernelContext& ctx) {
    return ir::visit_arithmetic(ctx.inputs[0]->dtype, [&](auto tag) -> Kernel {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_integral_v<T>) {
        return binary_kernel<T, T>(ctx, int_fn);
      } else {
        return binary_kernel<T, T>(ctx, float_fn);
      }
    });
  };
  def.grad = std::move(grad);
  return def;
}

// d(a op b): gradient of each input, before summing over broadcast dims.
std::vector<TensorId> finish(ir::GradContext& ctx, TensorId da, TensorId db) {
  const TensorId a = ctx.op.inputs[0], b = ctx.op.inputs[1];
  return {ctx.needs_grad[0] ? unbroadcast(ctx, da, ctx.shape(a)) : ir::kNoTensor,
          ctx.needs_grad[1] ? unbroadcast(ctx, db, ctx.shape(b)) : ir::kNoTensor};
}

/// An in-place op x <- f(x, y) with y broadcast to x's shape (no gradient rule).
template <class FloatFn, class IntFn>
OpDef inplace_def(const char* name, FloatFn float_fn, IntFn int_fn) {
  OpDef def = arithmetic(name, float_fn, int_fn, {});
  def.inplace_inputs = {0};
  def.infer = [](const ir::InferContext& ctx) {
    ctx.expect_numeric(0);
    ir::InferResult r = infer_broadcast(ctx, ctx.dtype(0));
    if (r.outputs[0].shape != ctx.shape(0)) ctx.fail(ErrorCode::ShapeMismatch, "y must broadcast to x's shape");
    return r;
  };
  return def;
}

const OpRegistration add_op{arithmetic(
    "add", [](float x, float y) { return x + y; },
    [](auto x, auto y) { return wrap<decltype(x)>(u64(x) + u64(y)); },
    [](ir::GradContext& ctx) {
      const TensorId dy = ctx.output_grads[0];
      return finish(ctx, dy, dy);
    })};

const OpRegistration sub_op{arithmetic(
    "sub", [](float x, float y) { return x - y; },
    [](auto x, auto y) { return wrap<decltype(x)>(u64(x) - u64(y)); },
    [](ir::GradContext& ctx) {
      const TensorId dy = ctx.output_grads[0];
      return finish(ctx, dy, ctx.needs_grad[1] ? ctx.add("neg", {dy}) : ir::kNoTensor);
    })};

const OpRegistration mul_op{arithmetic(
    "mul", [](float x, float y) { return x * y; },
    [](auto x, auto y) { return wrap<decltype(x)>(u64(x) * u64(y)); },
    [](ir::GradContext& ctx) {
      const TensorId dy = ctx.output_grads[0], a = ctx.op.inputs[0], b = ctx.op.inputs[1];
      return finish(ctx, ctx.needs_grad[0] ? ctx.add("mul", {dy, b}) : ir::kNoTensor,
                    ctx.needs_grad[1] ? ctx.add("mul", {dy, a}) : ir::kNoTensor);
    })};

const OpRegistration div_op{arithmetic(
    "div", [](float x, float y) { return x / y; },
    [](auto x, auto y) {
      using T = decltype(x);
      if (y == 0) {
        ir::fail(ErrorCode::Runtime, "op 'div': " + std::string(ir::dtype_name(ir::dtype_of<T>())) + " division by zero");
      }
      return wrap<T>(static_cast<uint64_t>(int64_t{x} / int64_t{y}));  // INT32_MIN / -1 wraps to INT32_MIN
    },
    [](ir::GradContext& ctx) {
      const TensorId dy = ctx.output_grads[0], a = ctx.op.inputs[0], b = ctx.op.inputs[1];
      TensorId db = ir::kNoTensor;
      if (ctx.needs_grad[1]) {  // d(a/b)/db = -a / b^2
        db = ctx.add("neg", {ctx.add("div", {ctx.add("mul", {dy, a}), ctx.add("mul", {b, b})})});
      }
      return finish(ctx, ctx.needs_grad[0] ? ctx.add("div", {dy, b}) : ir::kNoTensor, db);
    })};

const OpRegistration add_inplace_op{inplace_def(
    "add_", [](float x, float y) { return x + y; }, [](auto x, auto y) { return wrap<decltype(x)>(u64(x) + u64(y)); })};

// PopXL's ops.var_updates.copy_var_update_: x <- y, in place.
const OpRegistration copy_var_update_op{
    inplace_def("copy_var_update_", [](float, float y) { return y; }, [](auto, auto y) { return y; })};

OpDef equal_def() {
  OpDef def;
  def.name = "equal";
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](const ir::InferContext& ctx) { return infer_broadcast(ctx, DType::Bool); };
  def.kernel = [](const KernelContext& ctx) {
    auto eq = [](auto x, auto y) { return static_cast<uint8_t>(x == y); };
    return ir::visit_any(ctx.inputs[0]->dtype, [&](auto tag) -> Kernel {
      return binary_kernel<typename decltype(tag)::type, uint8_t>(ctx, eq);
    });
  };
  return def;
}
const OpRegistration equal_op{equal_def()};

}  // namespace

}  // namespace plexus::ops
