// C API: graphs, calls and graph autodiff (core/ir/subgraph.h, call.h, graph_autodiff.h).
#include "abi/src/handles.h"
#include "abi/src/struct_size.h"
#include "core/ir/call.h"
#include "core/ir/graph_autodiff.h"

using namespace plexus;
using abi::guarded;
using abi::require;

namespace {

/// Copies `ids` (tensor ids of the IR) to a caller's array, BufferTooSmall when it does not fit.
void copy_tensors(const ir::Graph& g, const std::vector<ir::TensorId>& ids, plx_tensor* out, size_t max,
                  size_t* out_count, const std::string& what) {
  if (max > 0) require(out, what.c_str(), "out_tensors");
  if (out_count) *out_count = ids.size();
  if (ids.size() > max) {
    ir::fail(ir::ErrorCode::BufferTooSmall, what + ": " + std::to_string(ids.size()) + " tensors, room for " +
                                                std::to_string(max));
  }
  for (size_t i = 0; i < ids.size(); ++i) out[i] = abi::encode_tensor(g, ids[i]);
}

/// Tensor ids from C, `count` of them (NULL allowed only when count is 0).
std::vector<ir::TensorId> decode_tensors(const ir::Graph& g, const plx_tensor* ids, size_t count,
                                         const std::string& what) {
  if (count > 0 && ids == nullptr) ir::fail(ir::ErrorCode::InvalidArgument, what + " is NULL");
  std::vector<ir::TensorId> out;
  for (size_t i = 0; i < count; ++i) out.push_back(abi::decode_tensor(g, ids[i], what + "[" + std::to_string(i) + "]"));
  return out;
}

/// Runs `add` (which returns the tensors it made) on the IR all or nothing and hands them
/// to the caller: their count to `num_outputs` (NULL allowed), their ids to `outputs`.
/// More than `max_outputs` is InvalidArgument ("<what> has N outputs but ..."), with the
/// IR unchanged and only `num_outputs` set.
template <class F>
void add_with_outputs(ir::Graph& g, F&& add, const std::string& what, plx_tensor* outputs, size_t max_outputs,
                      size_t* num_outputs) {
  const ir::Graph::Mark before = g.mark();
  std::vector<ir::TensorId> made;
  try {
    made = add();
    if (num_outputs) *num_outputs = made.size();
    if (made.size() > max_outputs) {
      ir::fail(ir::ErrorCode::InvalidArgument, what + " has " + std::to_string(made.size()) +
                                                   " outputs but max_outputs is " + std::to_string(max_outputs));
    }
  } catch (...) {
    g.rollback(before);
    throw;
  }
  for (size_t k = 0; k < made.size(); ++k) outputs[k] = abi::encode_tensor(g, made[k]);
}

}  // namespace

extern "C" {

PLX_API plx_status plx_ir_get_main_graph(const plx_ir* ir, plx_graph* out_graph) {
  return guarded([&] {
    require(ir, "plx_ir_get_main_graph", "ir");
    require(out_graph, "plx_ir_get_main_graph", "out_graph");
    *out_graph = abi::encode_graph(ir->graph, ir::kMainGraph);
  });
}

PLX_API plx_status plx_ir_create_graph(plx_ir* ir, const char* name, plx_graph* out_graph) {
  return guarded([&] {
    require(ir, "plx_ir_create_graph", "ir");
    require(name, "plx_ir_create_graph", "name");
    require(out_graph, "plx_ir_create_graph", "out_graph");
    *out_graph = abi::encode_graph(ir->graph, ir->graph.create_subgraph(name));
  });
}

PLX_API plx_status plx_ir_begin_graph(plx_ir* ir, plx_graph graph) {
  return guarded([&] {
    require(ir, "plx_ir_begin_graph", "ir");
    ir->graph.begin_graph(abi::decode_graph(ir->graph, graph, "plx_ir_begin_graph graph"));
  });
}

PLX_API plx_status plx_ir_end_graph(plx_ir* ir) {
  return guarded([&] {
    require(ir, "plx_ir_end_graph", "ir");
    ir->graph.end_graph();
  });
}

PLX_API plx_status plx_graph_add_input(plx_ir* ir, plx_graph graph, const char* name, plx_dtype dtype,
                                       const int64_t* shape, size_t rank, plx_tensor* out_tensor) {
  return guarded([&] {
    const char* fn = "plx_graph_add_input";
    require(ir, fn, "ir");
    require(name, fn, "name");
    require(out_tensor, fn, "out_tensor");
    const std::string what = std::string(fn) + " '" + name + "'";
    const ir::GraphId g = abi::decode_graph(ir->graph, graph, what);
    const ir::TensorId t = ir->graph.add_graph_input(g, name, abi::to_dtype(dtype, what), abi::to_shape(shape, rank, what));
    *out_tensor = abi::encode_tensor(ir->graph, t);
  });
}

PLX_API plx_status plx_graph_add_output(plx_ir* ir, plx_graph graph, plx_tensor tensor) {
  return guarded([&] {
    require(ir, "plx_graph_add_output", "ir");
    const ir::GraphId g = abi::decode_graph(ir->graph, graph, "plx_graph_add_output graph");
    ir->graph.add_graph_output(g, abi::decode_tensor(ir->graph, tensor, "plx_graph_add_output tensor"));
  });
}

PLX_API plx_status plx_graph_get_inputs(const plx_ir* ir, plx_graph graph, plx_tensor* out_tensors,
                                        size_t max_tensors, size_t* out_count) {
  return guarded([&] {
    require(ir, "plx_graph_get_inputs", "ir");
    const ir::GraphId g = abi::decode_graph(ir->graph, graph, "plx_graph_get_inputs graph");
    copy_tensors(ir->graph, ir->graph.subgraph(g).inputs, out_tensors, max_tensors, out_count, "plx_graph_get_inputs");
  });
}

PLX_API plx_status plx_graph_get_outputs(const plx_ir* ir, plx_graph graph, plx_tensor* out_tensors,
                                         size_t max_tensors, size_t* out_count) {
  return guarded([&] {
    require(ir, "plx_graph_get_outputs", "ir");
    const ir::GraphId g = abi::decode_graph(ir->graph, graph, "plx_graph_get_outputs graph");
    copy_tensors(ir->graph, ir->graph.subgraph(g).outputs, out_tensors, max_tensors, out_count,
                 "plx_graph_get_outputs");
  });
}

PLX_API void plx_call_options_init(plx_call_options* options) {
  if (options == nullptr) return;
  options->struct_size = sizeof(plx_call_options);
  options->modified = nullptr;
  options->reuse_code = 0;
}

PLX_API plx_status plx_ir_call(plx_ir* ir, plx_graph callee, const plx_tensor* inputs, size_t num_inputs,
                               const plx_call_options* options, plx_tensor* outputs, size_t max_outputs,
                               size_t* num_outputs, plx_call_site* out_site) {
  return guarded([&] {
    const char* fn = "plx_ir_call";
    require(ir, fn, "ir");
    if (max_outputs > 0) require(outputs, fn, "outputs");
    ir::Graph& g = ir->graph;
    const ir::GraphId callee_id = abi::decode_graph(g, callee, "plx_ir_call callee");
    const std::vector<ir::TensorId> args = decode_tensors(g, inputs, num_inputs, "plx_ir_call inputs");
    plx_call_options o;
    plx_call_options_init(&o);
    if (options) {
      o = abi::read_struct(*options, o,
                           {abi::end_of(&plx_call_options::modified), abi::end_of(&plx_call_options::reuse_code)},
                           "plx_ir_call options", "plx_call_options_init");
    }
    std::vector<bool> modified;
    if (o.modified) modified.assign(o.modified, o.modified + num_inputs);
    int32_t site = -1;
    const auto add = [&] {
      site = ir::call(g, callee_id, args, modified, o.reuse_code != 0);
      return g.call_site(site).outputs;
    };
    add_with_outputs(g, add, "plx_ir_call: graph '" + g.graph_name(callee_id) + "'", outputs, max_outputs,
                     num_outputs);
    if (out_site) *out_site = abi::encode_call_site(g, site);
  });
}

PLX_API plx_status plx_ir_repeat(plx_ir* ir, plx_graph graph, int64_t count, const plx_tensor* inputs,
                                 size_t num_inputs, plx_tensor* outputs, size_t max_outputs, size_t* num_outputs) {
  return guarded([&] {
    const char* fn = "plx_ir_repeat";
    require(ir, fn, "ir");
    if (max_outputs > 0) require(outputs, fn, "outputs");
    ir::Graph& g = ir->graph;
    const ir::GraphId body = abi::decode_graph(g, graph, "plx_ir_repeat graph");
    std::vector<ir::TensorId> args = decode_tensors(g, inputs, num_inputs, "plx_ir_repeat inputs");
    ir::Attributes attrs;
    attrs.set("graph", int64_t{body});
    attrs.set("count", count);
    const auto add = [&] { return g.add_op("repeat", std::move(args), std::move(attrs)); };
    add_with_outputs(g, add, "plx_ir_repeat: graph '" + g.graph_name(body) + "'", outputs, max_outputs, num_outputs);
  });
}

PLX_API plx_status plx_call_site_set_input_modified(plx_ir* ir, plx_call_site site, size_t input) {
  return guarded([&] {
    require(ir, "plx_call_site_set_input_modified", "ir");
    ir::Graph& g = ir->graph;
    g.set_call_input_modified(abi::decode_call_site(g, site, "plx_call_site_set_input_modified site"), input);
  });
}

PLX_API plx_status plx_call_site_get_parent(const plx_ir* ir, plx_call_site site, plx_tensor graph_tensor,
                                            plx_tensor* out_parent) {
  return guarded([&] {
    const char* fn = "plx_call_site_get_parent";
    require(ir, fn, "ir");
    require(out_parent, fn, "out_parent");
    const ir::Graph& g = ir->graph;
    const ir::CallSite& s = g.call_site(abi::decode_call_site(g, site, "plx_call_site_get_parent site"));
    const ir::TensorId t = abi::decode_tensor(g, graph_tensor, "plx_call_site_get_parent graph_tensor");
    auto it = s.graph_to_parent.find(t);
    if (it == s.graph_to_parent.end()) {
      const ir::TensorInfo& info = g.tensor(t);
      if (s.reuses_code && info.graph == s.callee) {
        ir::fail(ir::ErrorCode::InvalidArgument,
                 std::string(fn) + ": tensor '" + info.name + "' of graph '" + g.graph_name(s.callee) +
                     "' has no parent tensor: the call reuses the graph's code, so only its inputs and outputs do");
      }
      ir::fail(ir::ErrorCode::InvalidArgument, std::string(fn) + ": tensor '" + info.name + "' of graph '" +
                                                   g.graph_name(info.graph) + "' is not a tensor of the called graph '" +
                                                   g.graph_name(s.callee) + "'");
    }
    *out_parent = abi::encode_tensor(g, it->second);
  });
}

PLX_API void plx_autodiff_options_init(plx_autodiff_options* options) {
  if (options == nullptr) return;
  options->struct_size = sizeof(plx_autodiff_options);
  options->grads_provided = nullptr;
  options->num_grads_provided = 0;
  options->grads_required = nullptr;
  options->num_grads_required = 0;
}

PLX_API plx_status plx_graph_autodiff(plx_ir* ir, plx_graph graph, const plx_autodiff_options* options,
                                      plx_graph* out_grad_graph) {
  return guarded([&] {
    const char* fn = "plx_graph_autodiff";
    require(ir, fn, "ir");
    require(out_grad_graph, fn, "out_grad_graph");
    ir::Graph& g = ir->graph;
    const ir::GraphId forward = abi::decode_graph(g, graph, "plx_graph_autodiff graph");
    plx_autodiff_options o;
    plx_autodiff_options_init(&o);
    if (options) {
      o = abi::read_struct(*options, o, {abi::end_of(&plx_autodiff_options::num_grads_required)},
                           "plx_graph_autodiff options", "plx_autodiff_options_init");
    }
    std::optional<std::vector<ir::TensorId>> provided, required;
    if (o.grads_provided) provided = decode_tensors(g, o.grads_provided, o.num_grads_provided, "grads_provided");
    if (o.grads_required) required = decode_tensors(g, o.grads_required, o.num_grads_required, "grads_required");
    *out_grad_graph = abi::encode_graph(g, ir::autodiff_graph(g, forward, provided, required));
  });
}

PLX_API plx_status plx_graph_get_expected_connections(const plx_ir* ir, plx_graph grad_graph, int32_t outputs,
                                                      plx_expected_connection* out, size_t max_connections,
                                                      size_t* out_count, plx_graph* out_forward) {
  return guarded([&] {
    const char* fn = "plx_graph_get_expected_connections";
    require(ir, fn, "ir");
    if (max_connections > 0) require(out, fn, "out");
    const ir::Graph& g = ir->graph;
    const ir::GraphId id = abi::decode_graph(g, grad_graph, "plx_graph_get_expected_connections grad_graph");
    const ir::Subgraph& sub = g.subgraph(id);
    if (!sub.grad_of) {
      ir::fail(ir::ErrorCode::InvalidArgument, std::string(fn) + ": graph '" + sub.name +
                                                   "' is not a gradient graph (plx_graph_autodiff makes them)");
    }
    const auto& list = outputs ? sub.grad_of->expected_outputs : sub.grad_of->expected_inputs;
    if (out_count) *out_count = list.size();
    if (list.size() > max_connections) {
      ir::fail(ir::ErrorCode::BufferTooSmall, std::string(fn) + ": " + std::to_string(list.size()) +
                                                  " connections, room for " + std::to_string(max_connections));
    }
    for (size_t i = 0; i < list.size(); ++i) {
      out[i] = plx_expected_connection{abi::encode_tensor(g, list[i].fwd_tensor),
                                       static_cast<plx_connection_type>(list[i].type)};
    }
    if (out_forward) *out_forward = abi::encode_graph(g, sub.grad_of->forward);
  });
}

}  // extern "C"
