// Building blocks shared by gradient rules of several op families.
#pragma once

#include "core/ir/op_registry.h"

namespace plexus::ops {

/// Sums `grad` over the dims along which a tensor of shape `target` was broadcast (numpy
/// rules) and returns a tensor of shape `target`; `grad` itself when the shapes agree.
ir::TensorId unbroadcast(ir::GradContext& ctx, ir::TensorId grad, const ir::Shape& target);

/// `t` reshaped to `shape` (a view).
ir::TensorId reshape_to(ir::GradContext& ctx, ir::TensorId t, const ir::Shape& shape);

/// A float32 scalar constant.
ir::TensorId scalar_constant(ir::Graph& graph, float value);

}  // namespace plexus::ops
