// cast(x; dtype): converts between any two dtypes (dtype = PLX_DTYPE_* value), element by
// element, as the IPU's cast and numpy's astype agree on:
// - to float16: round to nearest, ties to even, overflow to +-inf (ir::float_to_half; an
//   integer goes through float32, exact for every value that does not overflow float16);
// - float (float32, float16) -> integer truncates toward zero and saturates at the target's
//   range (NaN -> 0), so no input is undefined behaviour; integer -> integer saturates too;
// - to bool: nonzero (NaN included) -> 1, zero -> 0; from bool: 0 or 1.
// Only a cast to float32 carries a gradient (autodiff differentiates float32 tensors only).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/ir/dtype_dispatch.h"
#include "core/ir/graph.h"
#include "core/ops/op_def.h"

namespace plexus::ops {

namespace {

using ir::DType;
using ir::TensorId;

template <class To, class From>
To convert(From x) {
  const auto v = ir::load(x);
  using V = decltype(v);
  if constexpr (std::is_same_v<To, ir::Boolean> || std::is_same_v<To, ir::Float16>) {
    return ir::store<To>(v);
  } else if constexpr (std::is_floating_point_v<V> && std::is_integral_v<To>) {
    if (std::isnan(v)) return 0;
    const double d = std::trunc(static_cast<double>(v));
    if (d <= static_cast<double>(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
    if (d >= static_cast<double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(d);
  } else if constexpr (std::is_integral_v<V> && std::is_integral_v<To>) {
    const auto v64 = static_cast<int64_t>(v);
    return static_cast<To>(std::clamp<int64_t>(v64, std::numeric_limits<To>::min(), std::numeric_limits<To>::max()));
  } else {
    return static_cast<To>(v);
  }
}

template <class To, class From>
Kernel cast_kernel(const KernelContext& ctx) {
  return [x = ctx.input<From>(0), y = ctx.output<To>(0), n = ir::numel(ctx.outputs[0]->shape)] {
    for (int64_t i = 0; i < n; ++i) y[i] = convert<To>(x[i]);
  };
}

OpDef cast_def() {
  OpDef d;
  d.name = "cast";
  d.attrs = {{"dtype", ir::AttrKind::Int, std::nullopt}};
  d.infer = [](const ir::InferContext& ctx) {
    const int64_t raw = ctx.attrs.get_int("dtype");
    if (!ir::is_valid_dtype(static_cast<int32_t>(raw)) || raw != static_cast<int32_t>(raw)) {
      ctx.fail(ir::ErrorCode::InvalidArgument, "dtype " + std::to_string(raw) + " is not a valid dtype");
    }
    return ir::InferResult{{{static_cast<DType>(raw), ctx.shape(0)}}};
  };
  d.kernel = [](const KernelContext& ctx) {
    return ir::visit_any(ctx.inputs[0]->dtype, [&](auto from) {
      return ir::visit_any(ctx.outputs[0]->dtype, [&](auto to) -> Kernel {
        return cast_kernel<typename decltype(to)::type, typename decltype(from)::type>(ctx);
      });
    });
  };
  d.grad = [](ir::GradContext& ctx) {
    const bool float_out = ctx.dtype(ctx.op.outputs[0]) == DType::Float32;
    return std::vector<TensorId>{float_out ? ctx.output_grads[0] : ir::kNoTensor};
  };
  return d;
}

const OpRegistration cast_op{cast_def()};

}  // namespace

}  // namespace plexus::ops
