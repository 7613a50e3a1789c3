#include "core/ir/autodiff.h"

#include <cstring>

#include "core/ir/backward.h"
#include "core/ir/error.h"

namespace plexus::ir {

namespace {

// The gradient of the sum of the loss: ones of its shape, as a scalar constant expanded
// (in the loss's block) when the loss is not a scalar. A constant of the loss's shape would
// hold its bytes in the IR now, whatever its size: a loss of 2^40 elements (valid in an IR;
// a session would refuse its memory) made autodiff allocate 4 TiB.
TensorId seed_gradient(Graph& graph, const TensorInfo& loss) {
  const float one = 1.0f;
  std::vector<std::byte> bytes(sizeof one);
  std::memcpy(bytes.data(), &one, sizeof one);
  const TensorId scalar = graph.add_constant(DType::Float32, {}, std::move(bytes));
  if (loss.shape.empty()) return scalar;
  Attributes attrs;
  attrs.set("shape", std::vector<int64_t>(loss.shape.begin(), loss.shape.end()));
  const int32_t outer = graph.set_implicit_block(loss.producer >= 0 ? graph.op(loss.producer).block : -1);
  const TensorId ones = graph.add_op("expand", {scalar}, std::move(attrs)).front();
  graph.set_implicit_block(outer);
  return ones;
}


}  // namespace

std::vector<TensorId> autodiff(Graph& graph, TensorId loss, std::span<const TensorId> wrt) {
  const TensorInfo loss_info = graph.tensor(loss);  // a copy: the ops added below reallocate the tensor list
  if (loss_info.dtype != DType::Float32) {
    fail(ErrorCode::InvalidArgument, "autodiff: loss '" + loss_info.name + "' is " + loss_info.type_string() +
                                         ", must be float32");
  }
  if (loss_info.graph != kMainGraph || graph.current_graph() != kMainGraph) {
    fail(ErrorCode::InvalidArgument, "autodiff: the loss '" + loss_info.name + "' and the current graph must be the "
                                     "main graph; differentiate a subgraph with graph autodiff");
  }
  if (loss_info.producer >= 0 && graph.op(loss_info.producer).phase != Phase::Forward) {
    // Its forward ops run in the weight update, after every gradient op that would read them.
    fail(ErrorCode::InvalidArgument, "autodiff: the loss '" + loss_info.name + "' was computed after an earlier "
                                     "autodiff (ops added then belong to the weight update); compute every loss "
                                     "before the first autodiff, or differentiate their sum once");
  }
  Backward backward(graph, graph.graph_ops(kMainGraph), wrt);
  graph.set_phase(Phase::Backward);
  backward.seed(loss, seed_gradient(graph, loss_info));
  backward.run();

  std::vector<TensorId> result;
  for (TensorId t : wrt) {
    const TensorId g = backward.gradient(t);
    if (g == kNoTensor) {
      fail(ErrorCode::InvalidArgument, "autodiff: the loss '" + loss_info.name + "' does not depend on '" +
                                           graph.tensor(t).name + "'");
    }
    result.push_back(g);
  }
  graph.set_phase(Phase::Update);  // ops added after autodiff update the weights
  return result;
}

}  // namespace plexus::ir
