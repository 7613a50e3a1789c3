#include "core/ir/call.h"

#include <map>

#include "core/ir/error.h"

namespace plexus::ir {

namespace {

/// Refuses a call that would make `caller` call itself.
void check_no_recursion(const Graph& graph, GraphId caller, GraphId callee) {
  const std::string& name = graph.graph_name(callee);
  if (callee == kMainGraph) fail(ErrorCode::InvalidArgument, "call: the main graph cannot be called");
  graph.subgraph(callee);  // exists
  if (callee == caller) fail(ErrorCode::InvalidArgument, "call: graph '" + name + "' calls itself");
  if (graph.calls(callee, caller)) {
    fail(ErrorCode::InvalidArgument, "call: graph '" + graph.graph_name(caller) + "' calls graph '" + name +
                                         "', which calls '" + graph.graph_name(caller) + "' (graphs cannot recurse)");
  }
}

/// Checks each argument against its input of the callee.
void check_args(const Graph& graph, GraphId caller, const Subgraph& callee, const std::vector<TensorId>& args,
                const std::vector<bool>& modified) {
  const std::string what = "call of graph '" + callee.name + "'";
  if (args.size() != callee.inputs.size()) {
    fail(ErrorCode::InvalidArgument, what + ": " + std::to_string(args.size()) + " arguments for " +
                                         std::to_string(callee.inputs.size()) + " inputs");
  }
  if (!modified.empty() && modified.size() != args.size()) {
    fail(ErrorCode::InvalidArgument, what + ": " + std::to_string(modified.size()) + " modified flags for " +
                                         std::to_string(args.size()) + " inputs");
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorInfo& in = graph.tensor(callee.inputs[i]);
    const TensorInfo& arg = graph.tensor(args[i]);
    const std::string where = what + ": input " + std::to_string(i) + " '" + in.name + "'";
    if (arg.graph != caller) {
      fail(ErrorCode::InvalidArgument, where + " is given tensor '" + arg.name + "' of graph '" +
                                           graph.graph_name(arg.graph) + "', not of the calling graph '" +
                                           graph.graph_name(caller) + "'");
    }
    if (arg.dtype != in.dtype) {
      fail(ErrorCode::DTypeMismatch, where + " is " + in.type_string() + ", the argument '" + arg.name + "' is " +
                                         arg.type_string());
    }
    if (arg.shape != in.shape) {
      fail(ErrorCode::ShapeMismatch, where + " is " + in.type_string() + ", the argument '" + arg.name + "' is " +
                                         arg.type_string());
    }
  }
}

/// Which inputs of `callee` its ops write in place.
std::vector<bool> written_inputs(const Graph& graph, const Subgraph& callee) {
  std::vector<bool> written(callee.inputs.size(), false);
  for (OpId o : callee.ops) {
    const Op& op = graph.op(o);
    for (size_t k = 0; k < op.outputs.size() && k < op.schema->inplace_inputs.size(); ++k) {
      const int i = op.schema->inplace_inputs[k];
      if (i < 0) continue;
      const TensorId root = graph.storage_root(op.inputs[static_cast<size_t>(i)]);
      for (size_t j = 0; j < callee.inputs.size(); ++j) written[j] = written[j] || callee.inputs[j] == root;
    }
  }
  return written;
}

TensorId copy_of(Graph& graph, TensorId t) { return graph.add_op("identity", {t}, {}).front(); }

/// The parent tensor of tensor t of the callee; a constant of the callee gets its copy in
/// the caller on first use.
TensorId parent_of(Graph& graph, TensorId t, std::map<TensorId, TensorId>& to_parent) {
  auto it = to_parent.find(t);
  if (it == to_parent.end()) {
    const TensorInfo c = graph.tensor(t);  // a copy: add_constant grows the tensor list
    it = to_parent.emplace(t, graph.add_constant(c.dtype, c.shape, c.data)).first;
  }
  return it->second;
}

/// Adds a copy of op `o` of the callee reading the parent tensors of its inputs, and maps
/// its outputs to the copy's.
void add_op_copy(Graph& graph, OpId o, std::map<TensorId, TensorId>& to_parent) {
  const Op op = graph.op(o);  // a copy: add_op reallocates the op lists
  std::vector<TensorId> inputs;
  for (TensorId in : op.inputs) inputs.push_back(parent_of(graph, in, to_parent));
  const std::vector<TensorId> outputs = graph.add_op(op.schema->name, inputs, op.attrs);
  for (size_t k = 0; k < outputs.size(); ++k) {
    const TensorInfo& planned = graph.tensor(op.outputs[k]);
    const TensorInfo& made = graph.tensor(outputs[k]);
    if (made.dtype != planned.dtype || made.shape != planned.shape) {
      fail(ErrorCode::ShapeMismatch, "call: op '" + op.name + "' makes " + made.type_string() +
                                         " from the call's arguments, " + planned.type_string() +
                                         " in its graph (an input's sharding differs?)");
    }
    to_parent[op.outputs[k]] = outputs[k];
  }
}

/// A call that reuses code: one `call` op; its site maps the callee's inputs and outputs.
int32_t add_call_op(Graph& graph, GraphId caller, GraphId callee, const std::vector<TensorId>& args,
                    const std::vector<bool>& modified) {
  const Subgraph& sub = graph.subgraph(callee);
  for (size_t i = 0; i < modified.size(); ++i) {
    if (!modified[i]) continue;
    fail(ErrorCode::InvalidArgument, "call of graph '" + sub.name + "': input " + std::to_string(i) + " '" +
                                         graph.tensor(sub.inputs[i]).name +
                                         "' cannot be modified: a call that reuses code passes every input by value "
                                         "(an inlined call writes through to its arguments)");
  }
  Attributes attrs;
  attrs.set("graph", int64_t{callee});
  const std::vector<TensorId> outputs = graph.add_op("call", args, std::move(attrs));
  CallSite site{caller, callee, args, outputs, modified, {}, true};
  const Subgraph& called = graph.subgraph(callee);  // add_op may have grown the subgraph list's storage
  for (size_t i = 0; i < args.size(); ++i) site.graph_to_parent[called.inputs[i]] = args[i];
  for (size_t j = 0; j < outputs.size(); ++j) site.graph_to_parent.try_emplace(called.outputs[j], outputs[j]);
  return graph.add_call_site(std::move(site));
}

}  // namespace

int32_t call(Graph& graph, GraphId callee, const std::vector<TensorId>& args, std::vector<bool> modified,
             bool reuse_code) {
  const GraphId caller = graph.current_graph();
  check_no_recursion(graph, caller, callee);
  const Subgraph sub = graph.subgraph(callee);  // a copy: calls grow the IR
  check_args(graph, caller, sub, args, modified);
  if (modified.empty()) modified.assign(args.size(), false);
  if (reuse_code) return add_call_op(graph, caller, callee, args, modified);
  CallSite site{caller, callee, args, {}, modified, {}};
  const std::vector<bool> written = written_inputs(graph, sub);
  for (size_t i = 0; i < args.size(); ++i) {
    site.graph_to_parent[sub.inputs[i]] = written[i] && !modified[i] ? copy_of(graph, args[i]) : args[i];
  }
  for (OpId o : sub.ops) add_op_copy(graph, o, site.graph_to_parent);
  for (TensorId out : sub.outputs) {
    const TensorId parent = parent_of(graph, out, site.graph_to_parent);
    // An output that is an input, or its storage, is returned by value too.
    const TensorKind root_kind = graph.tensor(graph.storage_root(out)).kind;
    site.outputs.push_back(root_kind == TensorKind::GraphInput ? copy_of(graph, parent) : parent);
    if (graph.tensor(out).kind != TensorKind::GraphInput) site.graph_to_parent[out] = site.outputs.back();
  }
  return graph.add_call_site(std::move(site));
}

}  // namespace plexus::ir
