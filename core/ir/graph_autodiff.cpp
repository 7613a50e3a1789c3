#include "core/ir/graph_autodiff.h"

#include <algorithm>

#include "core/ir/backward.h"
#include "core/ir/error.h"

namespace plexus::ir {

namespace {

/// `chosen` (or, by default, the float32 tensors of `all`), each checked to be in `all`
/// and float32; `role` is "output" or "input".
std::vector<TensorId> pick(const Graph& graph, const Subgraph& fwd, const std::vector<TensorId>& all,
                           const std::optional<std::vector<TensorId>>& chosen, const std::string& role) {
  std::vector<TensorId> out;
  if (!chosen) {
    std::copy_if(all.begin(), all.end(), std::back_inserter(out),
                 [&](TensorId t) { return graph.tensor(t).dtype == DType::Float32; });
    return out;
  }
  for (TensorId t : *chosen) {
    const TensorInfo& info = graph.tensor(t);
    const std::string what = "autodiff of graph '" + fwd.name + "': '" + info.name + "'";
    if (std::find(all.begin(), all.end(), t) == all.end()) {
      fail(ErrorCode::InvalidArgument, what + " is not an " + role + " of the graph (" +
                                           (role == "output" ? "grads_provided" : "grads_required") +
                                           " names the graph's " + role + "s)");
    }
    if (info.dtype != DType::Float32) {
      fail(ErrorCode::InvalidArgument, what + " is " + info.type_string() + ": only float32 tensors have gradients");
    }
    out.push_back(t);
  }
  return out;
}

/// A name for the gradient graph of `forward` that no graph has yet.
std::string grad_graph_name(const Graph& graph, const std::string& forward) {
  const auto taken = [&](const std::string& name) {
    for (size_t g = 0; g < graph.num_graphs(); ++g) {
      if (graph.graph_name(static_cast<GraphId>(g)) == name) return true;
    }
    return false;
  };
  std::string name = forward + "_grad";
  for (int n = 2; taken(name); ++n) name = forward + "_grad" + std::to_string(n);
  return name;
}

/// The body of autodiff_graph, inside the gradient graph's scope and capture.
void build_grad_graph(Graph& graph, const Subgraph& fwd, GraphId grad, const std::vector<TensorId>& provided,
                      const std::vector<TensorId>& required, bool chosen, GradOf& info) {
  Backward backward(graph, fwd.ops, required);
  for (TensorId out : provided) {
    const TensorInfo t = graph.tensor(out);  // a copy: the input below grows the tensor list
    backward.seed(out, graph.add_graph_input(grad, "grad(" + t.name + ")", t.dtype, t.shape));
    info.expected_inputs.push_back({out, ConnectionType::FwdGrad});
  }
  backward.run();
  for (TensorId in : required) {
    const TensorId g = backward.gradient(in);
    if (g == kNoTensor && !chosen) continue;  // by default, the inputs that have a gradient
    if (g == kNoTensor) {
      fail(ErrorCode::InvalidArgument, "autodiff of graph '" + fwd.name + "': no provided output depends on input '" +
                                           graph.tensor(in).name + "', so it has no gradient");
    }
    graph.add_graph_output(grad, g);
    info.expected_outputs.push_back({in, ConnectionType::FwdGrad});
  }
}

}  // namespace

GraphId autodiff_graph(Graph& graph, GraphId forward, std::optional<std::vector<TensorId>> grads_provided,
                       std::optional<std::vector<TensorId>> grads_required) {
  if (forward == kMainGraph) {
    fail(ErrorCode::InvalidArgument, "autodiff of graph 'main': differentiate the main graph with plx_ir_autodiff "
                                     "(a loss and the tensors wanted)");
  }
  const Subgraph fwd = graph.subgraph(forward);  // a copy: the gradient graph grows the graph list
  const std::vector<TensorId> provided = pick(graph, fwd, fwd.outputs, grads_provided, "output");
  const std::vector<TensorId> required = pick(graph, fwd, fwd.inputs, grads_required, "input");
  const Graph::Mark before = graph.mark();
  const GraphId grad = graph.create_subgraph(grad_graph_name(graph, fwd.name));
  GradOf info{forward, {}, {}};
  graph.begin_graph(grad);
  graph.begin_capture(forward);
  try {
    build_grad_graph(graph, fwd, grad, provided, required, grads_required.has_value(), info);
  } catch (...) {
    graph.end_capture();
    graph.end_graph();
    graph.rollback(before);
    throw;
  }
  for (TensorId t : graph.end_capture()) info.expected_inputs.push_back({t, ConnectionType::Fwd});
  graph.end_graph();
  graph.set_grad_of(grad, std::move(info));
  return grad;
}

}  // namespace plexus::ir
