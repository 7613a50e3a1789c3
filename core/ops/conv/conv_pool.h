// conv2d -> relu -> max_pool2d (seed 002's Conv2D(relu) -> MaxPooling2D) and conv2d ->
// max_pool2d -> relu (seed 003's Conv blocks) as one kernel per pass, a few images at a time,
// so that the conv output ([N,F,OH,OW], 5.5 MB in seed 002 at batch 64) is never stored:
// each image's conv output is made in scratch (86 KB there, in L2) and pooled at once.
// The compiler groups the ops (core/compile/conv_pool_fusion.h); these are the groups'
// OpDef::group_scratch and group_kernel.
//
//   forward group  {conv2d, relu, max_pool2d} or {conv2d, max_pool2d, relu}
//                  reads x, w[, b]; writes the group's last output (pooled, relu'd)
//   gradient group {max_pool2d_grad, conv2d_grad_weight[, reduce_sum (the bias gradient)]}
//                  reads x, w[, b], dy (the pool output's gradient); writes dw[, db].
//                  It recomputes each image's conv output (the forward kernel, ~8 % of a
//                  seed 002 step), takes the pool gradient over it in place, adds the image
//                  into dw's sums (ConvPlan::grad_weight_add, in grad_weight's chunks) and
//                  into db (row_sum per filter plane, in reduce_sum's order). Recomputing
//                  costs less than what storing the conv output costs: at two replicas,
//                  seed 002's kernels ran 1.6-2.6x slower with their arenas no longer in
//                  the shared L3 (bench/README.md, stop 30).
// Both give the unfused ops' bits: the same kernels on the same values in the same order.
// The kernels run on the calling thread, and need the windows to tile the plane (kernel ==
// stride, 2 or 3, no padding: the pool gradient then runs in place).
#pragma once

#include <cstddef>
#include <optional>
#include <span>

#include "core/ir/graph.h"

namespace plexus::ops {

/// Scratch bytes of the forward group `group` (conv2d first, as above), or nullopt when its
/// pool's windows do not tile the plane.
std::optional<size_t> conv_pool_forward_scratch(const ir::Graph& graph, std::span<const ir::OpId> group);
/// The forward group's kernel: ctx inputs {x, w[, b]}, output {the group's last output}.
ir::Kernel conv_pool_forward_kernel(const ir::KernelContext& ctx, std::span<const ir::OpId> group);

/// Scratch bytes of the gradient group `group` (max_pool2d_grad first, as above), or
/// nullopt when the pool's windows do not tile the plane.
std::optional<size_t> conv_pool_grad_scratch(const ir::Graph& graph, std::span<const ir::OpId> group);
/// The gradient group's kernel: ctx inputs {x, w[, b], dy}, outputs {dw[, db]}.
ir::Kernel conv_pool_grad_kernel(const ir::KernelContext& ctx, std::span<const ir::OpId> group);

}  // namespace plexus::ops
