// Conv -> relu -> max-pool groups (issue 19: "fuse conv + bias + relu + maxpool where the
// graph has them"): the forward ops and the gradient ops around a conv output that only the
// pool and its gradient read each run as one kernel (core/ops/conv/conv_pool.h), which makes
// the conv output one image at a time in scratch, so it is never stored. Seed 002's conv
// output is 5.5 MB per replica at batch 64, touched six times a step (written, pooled, read
// and written by the pool gradient, read by the weight and bias gradients); at two replicas
// that traffic no longer fitted the shared L3 (bench/README.md, stop 30).
//
// A conv2d C groups when the graph has, all on one stage:
//   forward   C -> relu -> max_pool2d P (seed 002), or C -> max_pool2d P -> relu (seed 003),
//             each intermediate read by nothing else than named here;
//   gradient  max_pool2d_grad G of P (reading the tensor P pools), whose output only
//             conv2d_grad_weight W (of C's x) and, when C has a bias, reduce_sum B over
//             axes {0, 2, 3} (the bias gradient) read: no conv2d_grad_input (x needs no
//             gradient: a first layer, as both seeds' first conv);
//   no intermediate is streamed to the host or a view, and the fused ops' shape inference
//   accept the groups (the pool's windows tile the plane).
// The rewrite makes the forward ops the fused op conv2d_relu_max_pool2d (reading C's
// inputs, writing the last one's output) and the gradient ops
// conv2d_relu_max_pool2d_grad_weight (reading C's inputs and G's dy, writing W's[, B's]
// output), each at its first op's place (core/ops/conv/conv_pool.cpp has their kernels).
// The tensors between the ops are left with no producer and no reader: nothing stores them.
// It runs before the relu-epilogue rewrite, which would otherwise take the relu.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/ir/graph.h"

namespace plexus::compile {

/// The rewrite (above) on every conv2d of `graph` that groups, in op order; `op_stage`
/// places each op on a stage and loses the entries of the ops removed. Returns how many
/// convs it fused. A conv whose pool's windows the fused kernels do not take (they must
/// tile the plane) stays as it is. Idempotent: a fused graph has no group left.
size_t fuse_conv_pool_groups(ir::Graph& graph, std::vector<int32_t>& op_stage);

}  // namespace plexus::compile
