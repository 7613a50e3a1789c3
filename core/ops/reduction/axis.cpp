#include "core/ops/reduction/axis.h"

#include <string>

namespace plexus::ops {

int64_t checked_axis(const ir::InferContext& ctx, int64_t axis) {
  const int64_t normalized = ir::normalize_axis(axis, ctx.rank(0));
  if (normalized < 0) {
    ctx.fail(ir::ErrorCode::InvalidArgument,
             "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(ctx.rank(0)));
  }
  return normalized;
}

AxisSplit split_at_axis(std::span<const int64_t> shape, int64_t axis) {
  AxisSplit s;
  const auto a = static_cast<size_t>(axis);
  for (size_t d = 0; d < a; ++d) s.outer *= shape[d];
  s.len = shape[a];
  for (size_t d = a + 1; d < shape.size(); ++d) s.inner *= shape[d];
  return s;
}

}  // namespace plexus::ops
