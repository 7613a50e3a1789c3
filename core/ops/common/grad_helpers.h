// Building blocks shared by gradient rules of several op families.
#pragma once

#include "core/ops/op_def.h"

namespace plexus::ops {

/// Sums `grad` over the dims along which a tensor of shape `target` was broadcast (numpy
/// rules) and returns a tensor of shape `target`; `grad` itself when the shapes agree.
ir::TensorId unbroadcast(ir::GradContext& ctx, ir::TensorId grad, const ir::Shape& target);

/// `t` reshaped to `shape` (a view).
ir::TensorId reshape_to(ir::GradContext& ctx, ir::TensorId t, const ir::Shape& shape);

/// A float32 scalar constant.
ir::TensorId scalar_constant(ir::Graph& graph, float value);

/// Whether t is the output of a relu op (relu -> max_pool2d folding, pooling.cpp).
bool produced_by_relu(const ir::Graph& graph, ir::TensorId t);

/// Whether `grad` is the output of a max_pool2d_grad with relu_folded = 1 over `relu_out`:
/// relu's gradient is already in it, so relu's rule passes it on as it is.
bool is_relu_folded_pool_grad(const ir::Graph& graph, ir::TensorId grad, ir::TensorId relu_out);

/// Whether the gradient of a relu of t folds into the gradient of t's producer (max_pool2d
/// -> relu, seed 003's Conv blocks): t is a max_pool2d output that a relu alone reads, and
/// t's own gradient is not requested. Both rules ask it: the relu's passes its gradient on
/// as it is, the max_pool2d's applies the relu's mask (relu_folded, pooling.cpp).
bool relu_folds_into_pool_above(const ir::GradContext& ctx, ir::TensorId t);

}  // namespace plexus::ops
