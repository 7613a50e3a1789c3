// C API: building an IR.
#include <cstring>

#include "abi/src/handles.h"
#include "core/ir/autodiff.h"

using namespace plexus;
using abi::guarded;
using abi::require;

namespace {

// The attribute "buffer" carries a plx_remote_buffer id, "graph" and "grad_graph" (repeat,
// repeat_grad) a plx_graph id; the core wants their indices.
int64_t int_attribute(const ir::Graph& graph, const plx_attr& a, const std::string& op) {
  const std::string name = a.name;
  const std::string what = "op '" + op + "' attribute '" + name + "'";
  if (name == "buffer") return abi::decode_remote_buffer(graph, static_cast<plx_remote_buffer>(a.i), what);
  if (name == "graph" || name == "grad_graph") return abi::decode_graph(graph, static_cast<plx_graph>(a.i), what);
  return a.i;
}

ir::Attributes to_attributes(const ir::Graph& graph, const plx_attr* attrs, size_t count, const std::string& op) {
  if (count > 0) require(attrs, "plx_ir_add_op", "attrs");
  ir::Attributes out;
  for (size_t i = 0; i < count; ++i) {
    const plx_attr& a = attrs[i];
    if (a.name == nullptr) ir::fail(ir::ErrorCode::InvalidArgument, "op '" + op + "': attribute " + std::to_string(i) + " has a NULL name");
    switch (a.kind) {
      case PLX_ATTR_INT:
        out.set(a.name, int_attribute(graph, a, op));
        break;
      case PLX_ATTR_FLOAT:
        out.set(a.name, a.f);
        break;
      case PLX_ATTR_INTS:
        if (a.num_ints > 0 && a.ints == nullptr) {
          ir::fail(ir::ErrorCode::InvalidArgument, "op '" + op + "': attribute '" + a.name + "' has NULL ints");
        }
        out.set(a.name, std::vector<int64_t>(a.ints, a.ints + a.num_ints));
        break;
      case PLX_ATTR_STRING:
        if (a.s == nullptr) ir::fail(ir::ErrorCode::InvalidArgument, "op '" + op + "': attribute '" + a.name + "' has a NULL string");
        out.set(a.name, std::string(a.s));
        break;
      default:
        ir::fail(ir::ErrorCode::InvalidArgument, "op '" + op + "': attribute '" + a.name + "' has kind " +
                                                     std::to_string(a.kind) + ", not a PLX_ATTR_* value");
    }
  }
  return out;
}

}  // namespace

extern "C" {

PLX_API plx_status plx_ir_create(plx_ir** out_ir) {
  return guarded([&] {
    require(out_ir, "plx_ir_create", "out_ir");
    *out_ir = new plx_ir{};
  });
}

PLX_API void plx_ir_destroy(plx_ir* ir) { delete ir; }

PLX_API void plx_variable_options_init(plx_variable_options* options) {
  if (options == nullptr) return;
  options->struct_size = sizeof(plx_variable_options);
  options->grouping = nullptr;
  options->retrieval_mode = PLX_RETRIEVAL_ONE_PER_GROUP;
  options->shard_over = 0;
}

PLX_API plx_status plx_ir_add_variable_with_options(plx_ir* ir, const char* name, plx_dtype dtype,
                                                    const int64_t* shape, size_t rank, const void* data,
                                                    size_t data_bytes, const plx_variable_options* options,
                                                    plx_tensor* out_tensor) {
  return guarded([&] {
    const char* fn = "plx_ir_add_variable";
    require(ir, fn, "ir");
    require(name, fn, "name");
    require(out_tensor, fn, "out_tensor");
    const std::string what = std::string(fn) + " '" + name + "'";
    if (data_bytes > 0) require(data, fn, "data");
    const abi::VariableOptions o = abi::to_variable_options(options, what);
    const ir::TensorId id = ir->graph.add_variable(name, abi::to_dtype(dtype, what), abi::to_shape(shape, rank, what),
                                                   abi::copy_bytes(data, data_bytes), o.grouping, o.retrieval);
    *out_tensor = abi::encode_tensor(ir->graph, id);
  });
}

PLX_API plx_status plx_ir_add_variable(plx_ir* ir, const char* name, plx_dtype dtype, const int64_t* shape,
                                       size_t rank, const void* data, size_t data_bytes, plx_tensor* out_tensor) {
  return plx_ir_add_variable_with_options(ir, name, dtype, shape, rank, data, data_bytes, nullptr, out_tensor);
}

PLX_API plx_status plx_ir_add_constant(plx_ir* ir, plx_dtype dtype, const int64_t* shape, size_t rank,
                                       const void* data, size_t data_bytes, plx_tensor* out_tensor) {
  return guarded([&] {
    const char* fn = "plx_ir_add_constant";
    require(ir, fn, "ir");
    require(out_tensor, fn, "out_tensor");
    if (data_bytes > 0) require(data, fn, "data");
    const ir::TensorId id = ir->graph.add_constant(abi::to_dtype(dtype, fn), abi::to_shape(shape, rank, fn),
                                                   abi::copy_bytes(data, data_bytes));
    *out_tensor = abi::encode_tensor(ir->graph, id);
  });
}

PLX_API plx_status plx_ir_add_h2d_stream(plx_ir* ir, const char* name, plx_dtype dtype, const int64_t* shape,
                                         size_t rank, plx_stream* out_stream, plx_tensor* out_tensor) {
  return guarded([&] {
    const char* fn = "plx_ir_add_h2d_stream";
    require(ir, fn, "ir");
    require(name, fn, "name");
    require(out_stream, fn, "out_stream");
    require(out_tensor, fn, "out_tensor");
    const std::string what = std::string(fn) + " '" + name + "'";
    const ir::StreamId s = ir->graph.add_h2d_stream(name, abi::to_dtype(dtype, what), abi::to_shape(shape, rank, what));
    *out_stream = abi::encode_stream(ir->graph, s);
    *out_tensor = abi::encode_tensor(ir->graph, ir->graph.stream(s).tensor);
  });
}

PLX_API plx_status plx_ir_add_d2h_stream(plx_ir* ir, const char* name, plx_tensor tensor, plx_stream* out_stream) {
  return guarded([&] {
    const char* fn = "plx_ir_add_d2h_stream";
    require(ir, fn, "ir");
    require(name, fn, "name");
    require(out_stream, fn, "out_stream");
    const ir::TensorId t = abi::decode_tensor(ir->graph, tensor, std::string(fn) + " '" + name + "'");
    *out_stream = abi::encode_stream(ir->graph, ir->graph.add_d2h_stream(name, t));
  });
}

PLX_API plx_status plx_ir_add_op(plx_ir* ir, const char* op, const plx_tensor* inputs, size_t num_inputs,
                                 const plx_attr* attrs, size_t num_attrs, plx_tensor* outputs, size_t max_outputs,
                                 size_t* num_outputs) {
  return guarded([&] {
    const char* fn = "plx_ir_add_op";
    require(ir, fn, "ir");
    require(op, fn, "op");
    if (num_inputs > 0) require(inputs, fn, "inputs");
    if (max_outputs > 0) require(outputs, fn, "outputs");
    std::vector<ir::TensorId> ins;
    for (size_t i = 0; i < num_inputs; ++i) {
      ins.push_back(abi::decode_tensor(ir->graph, inputs[i], "op '" + std::string(op) + "' input " + std::to_string(i)));
    }
    ir::Attributes attributes = to_attributes(ir->graph, attrs, num_attrs, op);
    const ir::Graph::Mark before = ir->graph.mark();
    const std::vector<ir::TensorId> outs = ir->graph.add_op(op, ins, attributes);
    if (outs.size() > max_outputs) {  // an error leaves the IR unchanged
      ir->graph.rollback(before);
      if (num_outputs) *num_outputs = outs.size();
      ir::fail(ir::ErrorCode::InvalidArgument, "op '" + std::string(op) + "' has " + std::to_string(outs.size()) +
                                                   " outputs but max_outputs is " + std::to_string(max_outputs));
    }
    for (size_t k = 0; k < outs.size(); ++k) outputs[k] = abi::encode_tensor(ir->graph, outs[k]);
    if (num_outputs) *num_outputs = outs.size();
  });
}

PLX_API plx_status plx_ir_autodiff(plx_ir* ir, plx_tensor loss, const plx_tensor* wrt, size_t num_wrt,
                                   plx_tensor* out_grads) {
  return guarded([&] {
    const char* fn = "plx_ir_autodiff";
    require(ir, fn, "ir");
    require(wrt, fn, "wrt");
    require(out_grads, fn, "out_grads");
    if (num_wrt == 0) ir::fail(ir::ErrorCode::InvalidArgument, "plx_ir_autodiff: num_wrt is 0");
    const ir::TensorId l = abi::decode_tensor(ir->graph, loss, "plx_ir_autodiff loss");
    std::vector<ir::TensorId> targets;
    for (size_t i = 0; i < num_wrt; ++i) {
      targets.push_back(abi::decode_tensor(ir->graph, wrt[i], "plx_ir_autodiff wrt[" + std::to_string(i) + "]"));
    }
    const ir::Graph::Mark before = ir->graph.mark();  // all or nothing
    std::vector<ir::TensorId> grads;
    try {
      grads = ir::autodiff(ir->graph, l, targets);
    } catch (...) {
      ir->graph.rollback(before);
      throw;
    }
    for (size_t i = 0; i < grads.size(); ++i) out_grads[i] = abi::encode_tensor(ir->graph, grads[i]);
  });
}

PLX_API plx_status plx_ir_get_tensor_type(const plx_ir* ir, plx_tensor tensor, plx_dtype* out_dtype,
                                          int64_t* out_shape, size_t max_rank, size_t* out_rank) {
  return guarded([&] {
    require(ir, "plx_ir_get_tensor_type", "ir");
    const ir::TensorInfo& t = ir->graph.tensor(abi::decode_tensor(ir->graph, tensor, "plx_ir_get_tensor_type"));
    abi::copy_shape(t.shape, out_shape, max_rank, out_rank);
    if (out_dtype) *out_dtype = static_cast<plx_dtype>(t.dtype);
  });
}

PLX_API plx_status plx_ir_get_tensor_name(const plx_ir* ir, plx_tensor tensor, char* buffer, size_t capacity,
                                          size_t* out_size) {
  return guarded([&] {
    require(ir, "plx_ir_get_tensor_name", "ir");
    if (capacity > 0) require(buffer, "plx_ir_get_tensor_name", "buffer");
    const ir::TensorInfo& t = ir->graph.tensor(abi::decode_tensor(ir->graph, tensor, "plx_ir_get_tensor_name"));
    abi::copy_text(t.name, buffer, capacity, out_size);
  });
}

}  // extern "C"
