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
//   no intermediate is streamed to the host or a view, and the leaders' OpDef::group_scratch
//   accept the groups (the pool's windows tile the plane).
// The groups are {C, relu, P} in op order (reads C's inputs, writes the last one's output)
// and {G, W[, B]} (reads C's inputs and G's dy, writes W's[, B's] output); they run at
// their first op's place, and replace the relu fusion of their relu.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/ir/graph.h"

namespace plexus::runtime {

/// Ops run as one kernel, the first op's OpDef::group_kernel; the tensors only they read
/// and write between them are never stored.
struct OpGroup {
  std::vector<ir::OpId> ops;          ///< in op order; the first leads and runs at its place
  std::vector<ir::TensorId> inputs;   ///< what the kernel reads, in group_kernel's order
  std::vector<ir::TensorId> outputs;  ///< what it writes
  size_t scratch_bytes = 0;           ///< from the leader's OpDef::group_scratch
};

/// The conv -> relu -> max-pool groups of `graph` (above), forward group then gradient
/// group per conv, in op order; `op_stage` places each op on a stage. Pure function of its
/// arguments.
std::vector<OpGroup> plan_conv_pool_groups(const ir::Graph& graph, const std::vector<int32_t>& op_stage);

}  // namespace plexus::runtime
