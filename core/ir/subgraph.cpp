// ir::Graph's subgraphs: creation, inputs and outputs, graph scopes, call sites, capture
// (core/ir/subgraph.h).
#include "core/ir/subgraph.h"

#include <algorithm>
#include <utility>

#include "core/ir/error.h"
#include "core/ir/graph.h"

namespace plexus::ir {

namespace {
const std::string kMainName = "main";
}

GraphId Graph::create_subgraph(const std::string& name) {
  if (name.empty()) fail(ErrorCode::InvalidArgument, "graph: the name must not be empty");
  for (size_t g = 0; g < num_graphs(); ++g) {
    if (graph_name(static_cast<GraphId>(g)) == name) {
      fail(ErrorCode::InvalidArgument, "graph '" + name + "': a graph with this name already exists");
    }
  }
  subgraphs_.push_back(Subgraph{name, {}, {}, {}, 0, std::nullopt});
  return static_cast<GraphId>(subgraphs_.size());
}

const std::string& Graph::graph_name(GraphId g) const {
  return g == kMainGraph ? kMainName : subgraph(g).name;
}

const Subgraph& Graph::subgraph(GraphId g) const {
  if (g == kMainGraph) fail(ErrorCode::InvalidArgument, "graph 'main' is the main graph, not a subgraph");
  if (g < 0 || static_cast<size_t>(g) > subgraphs_.size()) {
    fail(ErrorCode::NotFound, "graph " + std::to_string(g) + " does not exist (the IR has " +
                                  std::to_string(num_graphs()) + " graphs)");
  }
  return subgraphs_[static_cast<size_t>(g - 1)];
}

Subgraph& Graph::subgraph_mut(GraphId g) { return const_cast<Subgraph&>(std::as_const(*this).subgraph(g)); }

void Graph::require_main_graph(const std::string& what) const {
  const GraphId g = current_graph();
  if (g == kMainGraph) return;
  fail(ErrorCode::InvalidArgument, what + ": made inside graph '" + graph_name(g) +
                                       "'; variables, streams and blocks belong to the main graph (pass a "
                                       "variable to a subgraph as an input)");
}

void Graph::begin_graph(GraphId g) {
  graph_name(g);  // checks that it exists
  graph_stack_.push_back(g);
}

void Graph::end_graph() {
  if (graph_stack_.empty()) fail(ErrorCode::InvalidArgument, "graph scope: end without a matching begin");
  graph_stack_.pop_back();
}

TensorId Graph::add_graph_input(GraphId g, const std::string& name, DType dtype, Shape shape) {
  Subgraph& sub = subgraph_mut(g);
  const std::string what = "graph '" + sub.name + "' input '" + name + "'";
  if (name.empty()) fail(ErrorCode::InvalidArgument, "graph '" + sub.name + "' input: the name must not be empty");
  check_shape(shape, what);
  TensorInfo t;
  t.name = sub.name + "/" + name;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.kind = TensorKind::GraphInput;
  t.graph = g;
  const TensorId id = add_tensor(std::move(t));
  sub.inputs.push_back(id);
  return id;
}

void Graph::add_graph_output(GraphId g, TensorId t) {
  Subgraph& sub = subgraph_mut(g);
  const TensorInfo& info = tensor(t);
  if (info.graph != g) {
    fail(ErrorCode::InvalidArgument, "graph '" + sub.name + "' output: tensor '" + info.name +
                                         "' belongs to graph '" + graph_name(info.graph) + "'");
  }
  sub.outputs.push_back(t);
}

void Graph::set_grad_of(GraphId g, GradOf info) { subgraph_mut(g).grad_of = std::move(info); }

std::vector<OpId> Graph::graph_ops(GraphId g) const {
  if (g != kMainGraph) return subgraph(g).ops;
  std::vector<OpId> ids(ops_.size());
  for (size_t o = 0; o < ids.size(); ++o) ids[o] = static_cast<OpId>(o);
  return ids;
}

int32_t Graph::add_call_site(CallSite site) {
  call_sites_.push_back(std::move(site));
  return static_cast<int32_t>(call_sites_.size() - 1);
}

const CallSite& Graph::call_site(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= call_sites_.size()) {
    fail(ErrorCode::NotFound, "call site " + std::to_string(id) + " does not exist");
  }
  return call_sites_[static_cast<size_t>(id)];
}

void Graph::set_call_input_modified(int32_t id, size_t input) {
  call_site(id);  // checks that it exists
  CallSite& site = call_sites_[static_cast<size_t>(id)];
  const Subgraph& callee = subgraph(site.callee);
  if (input >= site.inputs.size()) {
    fail(ErrorCode::InvalidArgument, "call of graph '" + callee.name + "': input " + std::to_string(input) +
                                         " does not exist (the graph has " + std::to_string(site.inputs.size()) +
                                         " inputs)");
  }
  if (site.reuses_code) {
    fail(ErrorCode::InvalidArgument, "call of graph '" + callee.name + "': input " + std::to_string(input) +
                                         " cannot be marked modified: the call reuses the graph's code and passes "
                                         "every input by value (an inlined call writes through to its arguments)");
  }
  site.modified[input] = true;
  const TensorId arg = site.inputs[input];
  TensorId& parent = site.graph_to_parent[callee.inputs[input]];
  const TensorId copy = parent;
  parent = arg;
  if (copy == arg) return;
  for (OpId o : graph_ops(site.caller)) {
    std::vector<Op>& list = o >= kSubgraphOpBase ? sub_ops_ : ops_;
    Op& op = list[static_cast<size_t>(o >= kSubgraphOpBase ? o - kSubgraphOpBase : o)];
    std::replace(op.inputs.begin(), op.inputs.end(), copy, arg);
  }
  for (TensorInfo& t : tensors_) {
    if (t.alias_of == copy) t.alias_of = arg;
  }
}

std::vector<GraphId> Graph::callees(GraphId g) const {
  std::vector<GraphId> out;
  for (const CallSite& site : call_sites_) {
    if (site.caller == g) out.push_back(site.callee);
  }
  for (OpId o : graph_ops(g)) {  // a repeat or call op runs its graph (core/ops/graph/)
    const Op& op = this->op(o);
    if (op.schema->name == "repeat" || op.schema->name == "call") {
      out.push_back(static_cast<GraphId>(op.attrs.get_int("graph")));
    }
  }
  return out;
}

bool Graph::calls(GraphId from, GraphId to) const {
  std::vector<GraphId> frontier{from};
  std::vector<bool> seen(num_graphs(), false);
  while (!frontier.empty()) {
    const GraphId g = frontier.back();
    frontier.pop_back();
    for (GraphId callee : callees(g)) {
      if (callee == to) return true;
      if (seen[static_cast<size_t>(callee)]) continue;
      seen[static_cast<size_t>(callee)] = true;
      frontier.push_back(callee);
    }
  }
  return false;
}

void Graph::begin_capture(GraphId from) { captures_.push_back(Capture{from, current_graph(), {}, {}}); }

std::vector<TensorId> Graph::end_capture() {
  if (captures_.empty()) return {};
  std::vector<TensorId> order = std::move(captures_.back().order);
  captures_.pop_back();
  return order;
}

std::vector<TensorId> Graph::resolve_inputs(const OpSchema& def, std::vector<TensorId> inputs) {
  const GraphId g = current_graph();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string what = "op '" + def.name + "' in graph '" + graph_name(g) + "': input " + std::to_string(i);
    if (inputs[i] < 0 || static_cast<size_t>(inputs[i]) >= tensors_.size()) {
      fail(ErrorCode::NotFound, what + " is tensor " + std::to_string(inputs[i]) + ", which does not exist");
    }
    const TensorInfo& t = tensors_[static_cast<size_t>(inputs[i])];
    if (t.graph == g) continue;
    Capture* capture = captures_.empty() ? nullptr : &captures_.back();
    if (capture && capture->into == g && t.graph == capture->from) {
      auto [it, fresh] = capture->input_of.try_emplace(inputs[i], kNoTensor);
      if (fresh) {
        const std::string name = t.name;  // add_graph_input grows tensors_
        it->second = add_graph_input(g, name, t.dtype, t.shape);
        capture->order.push_back(inputs[i]);
      }
      inputs[i] = it->second;
      continue;
    }
    fail(ErrorCode::InvalidArgument, what + " is tensor '" + t.name + "' of graph '" + graph_name(t.graph) +
                                         "': an op reads tensors of its own graph only (pass it as a graph input)");
  }
  return inputs;
}

}  // namespace plexus::ir
