// C API: remote buffers, remote and replica-sharded variables, in_sequence scopes.
#include "abi/src/handles.h"

using namespace plexus;
using abi::guarded;
using abi::require;

namespace {

// Checks the pointers every variable function takes and returns the message prefix.
std::string variable_call(const char* fn, plx_ir* ir, const char* name, const void* data, size_t data_bytes,
                          const void* out) {
  require(ir, fn, "ir");
  require(name, fn, "name");
  require(out, fn, "out_tensor");
  if (data_bytes > 0) require(data, fn, "data");
  return std::string(fn) + " '" + name + "'";
}

}  // namespace

extern "C" {

PLX_API plx_status plx_ir_add_remote_buffer(plx_ir* ir, plx_dtype dtype, const int64_t* shape, size_t rank,
                                            int64_t entries, plx_remote_buffer* out_buffer) {
  return guarded([&] {
    const char* fn = "plx_ir_add_remote_buffer";
    require(ir, fn, "ir");
    require(out_buffer, fn, "out_buffer");
    const ir::RemoteBufferId id =
        ir->graph.add_remote_buffer(abi::to_dtype(dtype, fn), abi::to_shape(shape, rank, fn), entries);
    *out_buffer = abi::encode_remote_buffer(ir->graph, id);
  });
}

PLX_API plx_status plx_ir_add_remote_variable(plx_ir* ir, const char* name, plx_dtype dtype, const int64_t* shape,
                                              size_t rank, const void* data, size_t data_bytes,
                                              plx_remote_buffer buffer, int64_t entry,
                                              const plx_variable_options* options, plx_tensor* out_tensor) {
  return guarded([&] {
    const std::string what = variable_call("plx_ir_add_remote_variable", ir, name, data, data_bytes, out_tensor);
    const abi::VariableOptions o = abi::to_variable_options(options, what);
    const ir::TensorId id = ir->graph.add_remote_variable(
        name, abi::to_dtype(dtype, what), abi::to_shape(shape, rank, what), abi::copy_bytes(data, data_bytes),
        abi::decode_remote_buffer(ir->graph, buffer, what), entry, o.grouping, o.retrieval);
    *out_tensor = abi::encode_tensor(ir->graph, id);
  });
}

PLX_API plx_status plx_ir_add_replica_sharded_variable(plx_ir* ir, const char* name, plx_dtype dtype,
                                                       const int64_t* shape, size_t rank, const void* data,
                                                       size_t data_bytes, const plx_variable_options* options,
                                                       plx_tensor* out_variable, plx_tensor* out_shard) {
  return guarded([&] {
    const std::string what =
        variable_call("plx_ir_add_replica_sharded_variable", ir, name, data, data_bytes, out_variable);
    require(out_shard, "plx_ir_add_replica_sharded_variable", "out_shard");
    const abi::VariableOptions o = abi::to_variable_options(options, what);
    const ir::TensorId id =
        ir->graph.add_replica_sharded_variable(name, abi::to_dtype(dtype, what), abi::to_shape(shape, rank, what),
                                               abi::copy_bytes(data, data_bytes), o.grouping, o.retrieval, o.shard_over);
    *out_variable = *out_shard = abi::encode_tensor(ir->graph, id);
  });
}

PLX_API plx_status plx_ir_add_remote_replica_sharded_variable(plx_ir* ir, const char* name, plx_dtype dtype,
                                                              const int64_t* shape, size_t rank, const void* data,
                                                              size_t data_bytes, plx_remote_buffer buffer,
                                                              int64_t entry, const plx_variable_options* options,
                                                              plx_tensor* out_tensor) {
  return guarded([&] {
    const std::string what =
        variable_call("plx_ir_add_remote_replica_sharded_variable", ir, name, data, data_bytes, out_tensor);
    const abi::VariableOptions o = abi::to_variable_options(options, what);
    const ir::TensorId id = ir->graph.add_remote_replica_sharded_variable(
        name, abi::to_dtype(dtype, what), abi::to_shape(shape, rank, what), abi::copy_bytes(data, data_bytes),
        abi::decode_remote_buffer(ir->graph, buffer, what), entry, o.grouping, o.retrieval, o.shard_over);
    *out_tensor = abi::encode_tensor(ir->graph, id);
  });
}

PLX_API plx_status plx_ir_begin_sequence(plx_ir* ir) {
  return guarded([&] {
    require(ir, "plx_ir_begin_sequence", "ir");
    ir->graph.begin_in_sequence();
  });
}

PLX_API plx_status plx_ir_end_sequence(plx_ir* ir) {
  return guarded([&] {
    require(ir, "plx_ir_end_sequence", "ir");
    ir->graph.end_in_sequence();
  });
}

}  // extern "C"
