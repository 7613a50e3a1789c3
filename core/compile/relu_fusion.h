// Relu epilogues (issue 19: "fuse conv + bias + relu + maxpool where the graph has them"):
// a relu whose input only it reads runs inside the op producing that input, as the last
// step of that op's stores (oneDNN's post-ops, XLA's producer-consumer fusion). The op writes
// relu(y) straight into the relu's output and y is never stored: one pass over the
// activations instead of two. Seed 003's Conv blocks compute relu(max_pool2d(conv2d(x, w,
// b))), so their relu becomes max_pool2d's epilogue (the conv's bias already is its own);
// seed 002's conv2d -> relu makes the relu conv2d's.
//
// A relu R of input t fuses into t's producer P when
//   - P's OpDef says its kernel applies relu on request (OpDef::relu_epilogue) and P has one
//     output, t;
//   - R is t's only consumer (autodiff's relu_grad reads R's output, not t; a max_pool2d
//     gradient folded with R reads P's input), and t is not streamed to the host or a view;
//   - P and R run in the same step (stage and phase).
// The results are the same bits: relu(y) = y > 0 ? y : +0, the kernels' epilogues compute
// exactly that on the value they would have stored.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/graph.h"

namespace plexus::runtime {

/// One relu run as its input's producer's epilogue.
struct ReluFusion {
  ir::OpId producer;
  ir::OpId relu;
};

/// The relus of `graph` that fuse into their producer (above), in op order; `op_stage`
/// places each op on a stage. Pure function of its arguments.
std::vector<ReluFusion> plan_relu_fusions(const ir::Graph& graph, const std::vector<int32_t>& op_stage);

}  // namespace plexus::runtime
