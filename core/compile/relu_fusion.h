// Relu epilogues (issue 19: "fuse conv + bias + relu + maxpool where the graph has them"),
// a compile rewrite: a relu whose input only it reads runs inside the op producing that
// input, as the last step of that op's stores (oneDNN's post-ops, XLA's producer-consumer
// fusion). The producer P becomes the ordinary fused op `<P>_relu` (registered beside P,
// core/ops/common/relu_fused.h), which writes relu(y) into its own output t, and the relu
// R becomes `alias`, a view of t: y is never stored, one pass over the activations instead
// of two, and the program needs no action kind of its own for it. Seed 003's Conv blocks
// compute relu(max_pool2d(conv2d(x, w, b))), so their max_pool2d becomes max_pool2d_relu
// (the conv's bias already is its own epilogue); seed 002's conv2d -> relu makes conv2d_relu.
//
// A relu R of input t fuses into t's producer P when
//   - op `<P>_relu` is registered and P has one output, t;
//   - R is t's only consumer (autodiff's relu_grad reads R's output, not t; a max_pool2d
//     gradient folded with R reads P's input), and t is not streamed to the host or a view;
//   - P and R run in the same step (stage and phase). The conv -> relu -> max-pool rewrite
//     (conv_pool_fusion.h) runs first: the relus it fuses are gone.
// The results are the same bits: relu(y) = y > 0 ? y : +0, the kernels' epilogues compute
// exactly that on the value they would have stored.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/graph.h"

namespace plexus::compile {

/// One relu run as its input's producer's epilogue.
struct ReluFusion {
  ir::OpId producer;
  ir::OpId relu;
};

/// The relus of `graph` that fuse into their producer (above), in op order; `op_stage`
/// places each op on a stage. Pure function of its arguments.
std::vector<ReluFusion> plan_relu_fusions(const ir::Graph& graph, const std::vector<int32_t>& op_stage);

/// The rewrite: every fusion plan_relu_fusions finds becomes `<P>_relu` + `alias` (above).
/// Returns how many it made. Idempotent: a fused graph has no fusion left.
size_t fuse_relu_epilogues(ir::Graph& graph, const std::vector<int32_t>& op_stage);

}  // namespace plexus::compile
