// C API: sessions, runs, variables, memory statistics and reports.
#include <nlohmann/json.hpp>

#include <utility>

#include "abi/src/handles.h"
#include "abi/src/session_options_api.h"
#include "abi/src/struct_size.h"
#include "core/ops/matmul/blis_runtime.h"
#include "core/session/memory_report.h"

using namespace plexus;
using abi::guarded;
using abi::require;

namespace {

std::string report(const session::Session& s) {
  nlohmann::json j;
  j["device_iterations"] = s.options().device_iterations;
  j["replication_factor"] = s.replication_factor();
  j["workers"] = {{"count", s.options().num_workers},
                  {"index", s.options().worker_index},
                  {"first_local_replica", s.hosted_replicas().first},
                  {"local_replicas", s.hosted_replicas().count}};
  if (const plugin_host::Collectives* c = s.collectives()) j["collectives"] = {{"plugin", c->name()}, {"path", c->path()}};
  j["threads_per_device"] = s.options().threads_per_device;
  j["num_ops"] = s.graph().num_ops();
  j["gradient_accumulation"] = s.options().gradient_accumulation;
  j["weight_update_on_host"] = s.options().weight_update_on_host;
  j["gradient_bucket_bytes"] = s.options().gradient_bucket_bytes;
  j["gradient_buckets"] = nlohmann::json::array();
  for (const ir::Op& op : s.graph().ops()) {  // the gradient-bucket rewrite's ops
    if (!op.schema->name.starts_with("replicated_all_reduce_bucket")) continue;
    size_t bytes = 0;
    for (ir::TensorId t : op.inputs) bytes += s.graph().tensor(t).bytes();
    j["gradient_buckets"].push_back({{"all_reduces", op.inputs.size()}, {"bytes", bytes}});
  }
  j["training"] = s.training();
  j["micro_batches_per_iteration"] = s.micro_batches();
  j["execution_strategy"] = s.strategy_name();
  j["prefetch_depth"] = s.options().prefetch_depth;
  j["io_threads"] = s.options().io_threads;
  j["devices_per_replica"] = s.devices_per_replica();
  j["stages"] = nlohmann::json::array();
  for (int64_t st = 0; st < s.num_stages(); ++st) {
    j["stages"].push_back({{"name", s.placement().stage_names[static_cast<size_t>(st)]},
                           {"device", s.placement().stage_device[static_cast<size_t>(st)]}});
  }
  j["schedule"] = nlohmann::json::array();
  for (const auto& steps : s.schedule()) {
    std::string line;
    for (const compile::Step& step : steps) line += (line.empty() ? "" : " ") + compile::step_name(step);
    j["schedule"].push_back(line);
  }
  j["devices"] = nlohmann::json::array();
  for (size_t d = 0; d < s.num_devices(); ++d) {
    const runtime::DeviceMemoryStats m = s.memory_stats(d);
    j["devices"].push_back({{"index", d},
                            {"arena_bytes", m.arena_bytes},
                            {"variable_bytes", m.variable_bytes},
                            {"planned_peak_bytes", m.planned_peak_bytes},
                            {"remote_buffer_bytes", m.remote_buffer_bytes},
                            {"offloaded_bytes", m.offloaded_bytes},
                            {"peak_bytes", m.peak_bytes}});
  }
  j["kernels"] = s.notes();
  j["warnings"] = s.warnings();
  const ops::BlisInfo blis = ops::blis_info();
  j["blis"] = {{"version", blis.version},
               {"flavour", blis.flavour},
               {"default", blis.blis_default},
               {"candidates", blis.candidates},
               {"selection", blis.selection}};
  return j.dump(2);
}

}  // namespace

extern "C" {

PLX_API plx_status plx_session_create(const plx_ir* ir, const plx_session_options* options,
                                      plx_session** out_session) {
  return guarded([&] {
    require(ir, "plx_session_create", "ir");
    require(out_session, "plx_session_create", "out_session");
    auto handle = std::make_unique<plx_session>();
    handle->session = std::make_unique<session::Session>(ir->graph, abi::to_session_options(options));
    *out_session = handle.release();
  });
}

PLX_API void plx_session_destroy(plx_session* session) { delete session; }

PLX_API plx_status plx_session_run(plx_session* session, const plx_host_array* inputs, size_t num_inputs,
                                   const plx_host_array* outputs, size_t num_outputs) {
  return guarded([&] {
    require(session, "plx_session_run", "session");
    const ir::Graph& g = session->session->graph();
    runtime::RunRequest request;
    request.inputs = abi::to_arrays(g, inputs, num_inputs, "plx_session_run", "inputs");
    request.outputs = abi::to_arrays(g, outputs, num_outputs, "plx_session_run", "outputs");
    session->session->run(std::move(request));
  });
}

PLX_API plx_status plx_session_get_host_shape(const plx_session* session, plx_stream stream, int64_t* out_shape,
                                              size_t max_rank, size_t* out_rank) {
  return guarded([&] {
    require(session, "plx_session_get_host_shape", "session");
    const ir::StreamId s = abi::decode_stream(session->session->graph(), stream, "plx_session_get_host_shape");
    abi::copy_shape(session->session->host_shape(s), out_shape, max_rank, out_rank);
  });
}

PLX_API plx_status plx_session_get_variable_shape(const plx_session* session, plx_tensor tensor,
                                                  int64_t* out_shape, size_t max_rank, size_t* out_rank) {
  return guarded([&] {
    require(session, "plx_session_get_variable_shape", "session");
    const ir::TensorId t = abi::decode_tensor(session->session->graph(), tensor, "plx_session_get_variable_shape");
    abi::copy_shape(session->session->variable_shape(t), out_shape, max_rank, out_rank);
  });
}

PLX_API plx_status plx_session_read_variable(const plx_session* session, plx_tensor tensor, void* data,
                                             size_t data_bytes) {
  return guarded([&] {
    require(session, "plx_session_read_variable", "session");
    require(data, "plx_session_read_variable", "data");
    const ir::TensorId t = abi::decode_tensor(session->session->graph(), tensor, "plx_session_read_variable");
    session->session->read_variable(t, {static_cast<std::byte*>(data), data_bytes});
  });
}

PLX_API plx_status plx_session_write_variable(plx_session* session, plx_tensor tensor, const void* data,
                                              size_t data_bytes) {
  return guarded([&] {
    require(session, "plx_session_write_variable", "session");
    require(data, "plx_session_write_variable", "data");
    const ir::TensorId t = abi::decode_tensor(session->session->graph(), tensor, "plx_session_write_variable");
    session->session->write_variable(t, {static_cast<const std::byte*>(data), data_bytes});
  });
}

PLX_API plx_status plx_session_get_num_devices(const plx_session* session, size_t* out_count) {
  return guarded([&] {
    require(session, "plx_session_get_num_devices", "session");
    require(out_count, "plx_session_get_num_devices", "out_count");
    *out_count = session->session->num_devices();
  });
}

PLX_API plx_status plx_session_get_memory_stats(const plx_session* session, size_t device,
                                                plx_memory_stats* out_stats) {
  return guarded([&] {
    const char* fn = "plx_session_get_memory_stats";
    require(session, fn, "session");
    require(out_stats, fn, "out_stats");
    const runtime::DeviceMemoryStats m = session->session->memory_stats(device);
    plx_memory_stats full{};
    full.arena_bytes = m.arena_bytes;
    full.variable_bytes = m.variable_bytes;
    full.current_bytes = m.current_bytes;
    full.peak_bytes = m.peak_bytes;
    full.planned_peak_bytes = m.planned_peak_bytes;
    full.remote_buffer_bytes = m.remote_buffer_bytes;
    full.offloaded_bytes = m.offloaded_bytes;
    abi::write_struct(*out_stats, full,
                      {abi::end_of(&plx_memory_stats::planned_peak_bytes), abi::end_of(&plx_memory_stats::remote_buffer_bytes),
                       abi::end_of(&plx_memory_stats::offloaded_bytes)},
                      std::string(fn) + ": out_stats");
  });
}

PLX_API plx_status plx_session_get_variable_storage(const plx_session* session, plx_tensor tensor,
                                                    plx_variable_storage* out_storage) {
  return guarded([&] {
    const char* fn = "plx_session_get_variable_storage";
    require(session, fn, "session");
    require(out_storage, fn, "out_storage");
    const session::VariableStorage s =
        session->session->variable_storage(abi::decode_tensor(session->session->graph(), tensor, fn));
    plx_variable_storage full{};
    full.device_bytes = s.device_bytes;
    full.remote_bytes = s.remote_bytes;
    full.shard_over = s.shard_over;
    abi::write_struct(*out_storage, full, {abi::end_of(&plx_variable_storage::shard_over)},
                      std::string(fn) + ": out_storage");
  });
}

PLX_API plx_status plx_session_get_report(const plx_session* session, char* buffer, size_t capacity,
                                          size_t* out_size) {
  return guarded([&] {
    require(session, "plx_session_get_report", "session");
    if (capacity > 0) require(buffer, "plx_session_get_report", "buffer");
    abi::copy_text(report(*session->session), buffer, capacity, out_size);
  });
}

PLX_API plx_status plx_session_get_memory_report(const plx_session* session, char* buffer, size_t capacity,
                                                 size_t* out_size) {
  return guarded([&] {
    require(session, "plx_session_get_memory_report", "session");
    if (capacity > 0) require(buffer, "plx_session_get_memory_report", "buffer");
    abi::copy_text(session::memory_report(*session->session).dump(1), buffer, capacity, out_size);
  });
}

PLX_API plx_status plx_session_get_trace(const plx_session* session, char* buffer, size_t capacity,
                                         size_t* out_size) {
  return guarded([&] {
    require(session, "plx_session_get_trace", "session");
    if (capacity > 0) require(buffer, "plx_session_get_trace", "buffer");
    if (!session->session->options().profile) {
      ir::fail(ir::ErrorCode::InvalidArgument,
               "plx_session_get_trace: the session was created without options->profile, so no run was traced");
    }
    abi::copy_text(session->session->last_trace().to_json(), buffer, capacity, out_size);
  });
}

PLX_API plx_status plx_runtime_get_info(char* buffer, size_t capacity, size_t* out_size) {
  return guarded([&] {
    if (capacity > 0) require(buffer, "plx_runtime_get_info", "buffer");
    const ops::BlisInfo b = ops::blis_info();
    std::string candidates;
    for (const auto& c : b.candidates) candidates += (candidates.empty() ? "" : ",") + c;
    const std::string text = "Plexus API " + std::to_string(PLX_API_VERSION) + "; BLIS " +
                             (b.version.empty() ? "not initialised" : b.version) + " (" + b.flavour +
                             "); CPU: " + b.cpu_features + "; BLIS would pick " +
                             (b.blis_default.empty() ? "?" : b.blis_default) + "; kernel sets: " +
                             (candidates.empty() ? "none" : candidates) + "; selection: " + b.selection;
    abi::copy_text(text, buffer, capacity, out_size);
  });
}

}  // extern "C"
