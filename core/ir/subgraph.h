// Subgraphs of an IR (PopXL user guide, "Graphs"): a graph with ordered inputs and outputs
// that other graphs call (core/ir/call.h) and that graph autodiff differentiates
// (core/ir/graph_autodiff.h). Its tensors and ops belong to it alone; variables live in
// the main graph and reach a subgraph only as inputs.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/tensor.h"

namespace plexus::ir {

/// How a gradient graph's input or output relates to its forward graph (PopXL
/// ExpectedConnection): the forward tensor itself (an input, output or activation the
/// gradient graph reads), or the gradient of that forward tensor.
enum class ConnectionType : int32_t { Fwd = 0, FwdGrad = 1 };

struct ExpectedConnection {
  TensorId fwd_tensor = kNoTensor;  ///< a tensor of the forward graph
  ConnectionType type = ConnectionType::Fwd;
  bool operator==(const ExpectedConnection&) const = default;
};

/// What a gradient graph is the gradient of (PopXL GradGraphInfo, less the graph itself):
/// its i-th input is expected_inputs[i], its k-th output expected_outputs[k].
struct GradOf {
  GraphId forward = kMainGraph;
  std::vector<ExpectedConnection> expected_inputs;
  std::vector<ExpectedConnection> expected_outputs;
};

/// One subgraph. `ops` lists its ops in the order they were added (the order they run in,
/// as in the main graph); their ids are ir::Graph's subgraph op ids.
struct Subgraph {
  std::string name;
  std::vector<TensorId> inputs;
  std::vector<TensorId> outputs;
  std::vector<OpId> ops;
  int in_sequence_depth = 0;
  std::optional<GradOf> grad_of;  ///< set on the graphs graph autodiff made
};

/// One call of a subgraph (PopXL CallSiteInfo): the calling graph, the called graph, and
/// for every tensor of the called graph the tensor of the calling graph that holds its
/// value at this call (inputs: the arguments; outputs and intermediates: the tensors the
/// call made in the calling graph).
struct CallSite {
  GraphId caller = kMainGraph;
  GraphId callee = kMainGraph;
  std::vector<TensorId> inputs;   ///< parent tensors, one per graph input
  std::vector<TensorId> outputs;  ///< parent tensors, one per graph output
  std::vector<bool> modified;     ///< per graph input: writes inside reach the parent tensor
  /// The parent tensor of each callee tensor: every tensor of an inlined call; only the
  /// inputs and outputs of a call that reuses code (its ops run inside one call op).
  std::map<TensorId, TensorId> graph_to_parent;
  bool reuses_code = false;  ///< a call op (core/ops/graph/call.cpp), not the callee's ops inlined
};

}  // namespace plexus::ir
