#include "core/session/session.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>

#include <unistd.h>

#include "core/compile/passes.h"
#include "core/ir/error.h"
#include "core/runtime/device_program.h"
#include "core/runtime/host_update.h"
#include "core/runtime/run_queue.h"
#include "core/runtime/workers.h"
#include "core/session/core_budget.h"

namespace plexus::session {

using ir::ErrorCode;
using ir::Phase;
using runtime::cancelled_run;
using runtime::cluster_definition;
using runtime::DeviceMemoryStats;
using runtime::DeviceProgram;
using runtime::DeviceResources;
using runtime::HostArray;
using runtime::HostUpdate;
using runtime::primary_error;
using runtime::reads_in_place;
using runtime::ReplicaStorage;
using runtime::RunHandle;
using runtime::RunQueue;
using runtime::RunRequest;
using runtime::RunTrace;
using runtime::StreamBinding;
using runtime::StreamStats;
using runtime::trace_now;

namespace {

SessionOptions checked(const SessionOptions& options) {
  check_session_options(options);
  return resolve_workers(options);
}

/// Bytes of physical memory (the bound of a host array that can exist).
int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : INT64_MAX;
}

}  // namespace

Session::Session(const ir::Graph& graph, const SessionOptions& options) : graph_(graph), options_(checked(options)) {
  hosted_ = hosted_by_worker(options_, graph_.replication_factor());
  compile_program();
  const auto cores = static_cast<int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  const CoreBudget budget = plan_core_budget(hosted_.count * devices_per_replica(), options_.threads_per_device,
                                             options_.io_threads, cores);
  options_.threads_per_device = budget.threads_per_device;
  if (!budget.warning.empty()) warnings_.push_back(budget.warning);
  warn_once(budget.warning);
  const bool spin = budget.device_spin;
  open_plugins();
  storage_ = std::make_unique<ReplicaStorage>(graph_, program_, hosted_, host_update_.get(), spin);
  bind_streams(spin, budget.io_spin);
  devices_ = std::make_unique<DeviceProgram>(
      DeviceResources{graph_, program_, *storage_, *streams_, collectives_, host_update_.get(), hosted_,
                      options_.threads_per_device, options_.profile, spin},
      schedule_, iterations_);
  variables_ = std::make_unique<VariableAccess>(graph_, program_, hosted_, options_.num_workers, *storage_,
                                                host_update_.get(), [this]() -> plugin_host::Collectives& { return host_collectives(); });
  storage_->load_initial_values();
  variables_->refresh_host_weights();
  queue_ = std::make_unique<RunQueue>(
      [this](const RunRequest& request, const std::function<bool()>& cancelled) { return execute(request, cancelled); },
      [this](const std::string& reason) { devices_->abort_all(reason); });
}

Session::~Session() { queue_.reset(); }

void Session::compile_program() {
  compile::CompileRequest request{options_.stages, options_.execution_strategy, options_.strategy_options,
                         options_.device_iterations, options_.gradient_accumulation, {}, options_.device_memory_bytes};
  for (size_t i = 0; i < graph_.num_streams(); ++i) {
    const auto id = static_cast<ir::StreamId>(i);
    if (reads_in_place(graph_, id, options_.prefetch_depth)) {
      request.program.in_place.insert(graph_.storage_root(graph_.stream(id).tensor));
    }
  }
  // The host update keeps the optimizer state in host memory: offloaded, never staged.
  request.program.offload_optimizer_state = options_.offload_optimizer_state || options_.weight_update_on_host;
  request.program.gradient_bucket_bytes = options_.gradient_bucket_bytes;
  compile::Compilation c{graph_, std::move(request), {}, {}, 1, {}, {}};
  compile::run_passes(c);
  program_ = std::move(c.program);
  schedule_ = std::move(c.schedule);
  strategy_name_ = std::move(c.strategy_name);
  iterations_ = c.iterations;
  check_host_arrays();
}

void Session::check_host_arrays() const {
  const int64_t limit = physical_memory_bytes();
  for (size_t i = 0; i < graph_.num_streams(); ++i) {
    const auto id = static_cast<ir::StreamId>(i);
    stream_layout(id).host_bytes("stream '" + graph_.stream(id).name + "'", limit);
  }
}

void Session::open_plugins() {
  const bool communicates = std::any_of(graph_.ops().begin(), graph_.ops().end(),
                                        [](const ir::Op& op) { return op.schema->communicates; });
  if (replication_factor() > 1 && communicates) {
    for (int64_t d = 0; d < devices_per_replica(); ++d) {
      collectives_.push_back(make_collectives(false));
    }
  }
  if (options_.weight_update_on_host && program_.training) {
    host_update_ = std::make_unique<HostUpdate>(graph_, program_, replication_factor(), hosted_.first, hosted_.count,
                                                replication_factor() > 1 ? &host_collectives() : nullptr,
                                                [this](ir::TensorId t, int64_t r) { return storage_->variable_buffer(t, r); });
  }
}

plugin_host::Collectives& Session::host_collectives() const {
  if (!host_collectives_) {
    host_collectives_ = make_collectives(true);
  }
  return *host_collectives_;
}

std::unique_ptr<plugin_host::Collectives> Session::make_collectives(bool host_buffers) const {
  return std::make_unique<plugin_host::Collectives>(options_.collectives_plugin, replication_factor(), hosted_.first, hosted_.count,
                                       options_.collective_timeout_ms, host_buffers, cluster_definition());
}

void Session::bind_streams(bool spin, bool io_spin) {
  std::vector<int64_t> held(graph_.num_streams(), 0);  // in-place streams: micro-batches their stage holds
  for (const compile::StagePlan& sp : program_.stages) {
    for (const auto& [stream, last] : sp.in_place_last_use) held[static_cast<size_t>(stream)] = sp.slots;
  }
  streams_ = std::make_unique<StreamBinding>(graph_, hosted_.count, options_.prefetch_depth, options_.io_threads, spin, io_spin, held);
  for (size_t i = 0; i < graph_.num_streams(); ++i) layouts_.push_back(stream_layout(static_cast<ir::StreamId>(i)));
}

streams::HostArrayLayout Session::stream_layout(ir::StreamId stream) const {
  const streams::RunDims dims{options_.device_iterations, options_.gradient_accumulation, hosted_.count,
                              options_.output_mode, options_.output_return_period, options_.num_workers > 1};
  const ir::Stream& s = graph_.stream(stream);
  const ir::TensorInfo& t = graph_.tensor(s.tensor);
  if (s.direction == ir::StreamDirection::HostToDevice) return streams::HostArrayLayout::input(dims, t.dtype, t.shape);
  return streams::HostArrayLayout::output(dims, compile::stored_by_update(program_, stream), t.dtype, t.shape);
}

void Session::run(std::span<const HostArray> inputs, std::span<const HostArray> outputs) {
  RunRequest request;
  request.inputs.assign(inputs.begin(), inputs.end());
  request.outputs.assign(outputs.begin(), outputs.end());
  run(std::move(request));
}

void Session::run(RunRequest request) {
  check_request(request);
  queue_->run(std::move(request));
}

std::shared_ptr<RunHandle> Session::run_async(RunRequest request) {
  check_request(request);
  return queue_->submit(std::move(request));
}

void Session::cancel() { queue_->cancel(); }

void Session::prepare_run(const RunRequest& request) {
  if (options_.output_mode == OutputMode::Sum) {
    for (const HostArray& a : request.outputs) {
      std::memset(a.data, 0, static_cast<size_t>(ir::numel(a.shape)) * ir::dtype_size(a.dtype));
    }
  }
  if (host_update_) {
    host_update_->begin_run(iterations_, [this](const std::string& reason) { devices_->abort_all(reason); });
  }
}

std::exception_ptr Session::execute(const RunRequest& request, const std::function<bool()>& cancelled) {
  std::unique_lock variables = variables_->hold();
  try {
    for (auto& c : collectives_) c->ensure_comm();  // after a failed run (Collectives::reset)
    prepare_run(request);
  } catch (...) {  // a new communicator or the initial broadcast of the weights failed: nothing ran
    return std::current_exception();
  }
  streams_->bind(request, layouts_);
  std::mutex error_mutex;
  std::exception_ptr stream_error;
  streams_->start([&](std::exception_ptr e) {
    {
      std::lock_guard lock(error_mutex);
      stream_error = e;
    }
    devices_->abort_all("a stream failed");
  });
  const int64_t start = trace_now();
  // Every step (device iteration) is gradient_accumulation micro-batches, training or not.
  std::vector<std::exception_ptr> errors = devices_->run(steps_.load() * options_.gradient_accumulation);
  if (host_update_) errors.push_back(host_update_->end_run());
  std::exception_ptr error = primary_error(errors);
  streams_->finish(error != nullptr);
  record_run(start, trace_now());
  variables.unlock();
  if (cancelled()) {
    error = cancelled_run();
  } else if (std::lock_guard lock(error_mutex); stream_error) {
    error = stream_error;
  }
  if (error) {
    for (auto& c : collectives_) c->reset();
  } else {
    steps_ += options_.device_iterations;
  }
  return error;
}

void Session::record_run(int64_t start, int64_t end) {
  std::lock_guard lock(stats_mutex_);
  stream_stats_ = streams_->stats();
  stream_stats_.run_ns = end - start;
  if (!options_.profile) return;
  trace_ = RunTrace{start, end, devices_per_replica(), devices_->take_spans(), program_.placement.stage_names, {}};
  for (const auto& op : graph_.ops()) trace_.op_names.push_back(op.name);
}

StreamStats Session::last_stream_stats() const {
  std::lock_guard lock(stats_mutex_);
  return stream_stats_;
}

RunTrace Session::last_trace() const {
  std::lock_guard lock(stats_mutex_);
  return trace_;
}

ir::Shape Session::host_shape(ir::StreamId stream) const {
  graph_.stream(stream);  // checks the id
  return layouts_[static_cast<size_t>(stream)].host_shape();
}

void Session::check_arrays(std::span<const HostArray> arrays, ir::StreamDirection direction, bool required,
                           std::vector<bool>& seen) const {
  const char* role = direction == ir::StreamDirection::HostToDevice ? "input" : "output";
  for (const HostArray& a : arrays) {
    const ir::Stream& s = graph_.stream(a.stream);
    auto what = [&] { return std::string(role) + " stream '" + s.name + "'"; };
    if (s.direction != direction) {
      ir::fail(ErrorCode::InvalidArgument, "stream '" + s.name + "' is " +
                                               (s.direction == ir::StreamDirection::HostToDevice ? "host-to-device"
                                                                                                  : "device-to-host") +
                                               ", not an " + role);
    }
    if (seen[static_cast<size_t>(a.stream)]) ir::fail(ErrorCode::InvalidArgument, what() + " is given twice");
    seen[static_cast<size_t>(a.stream)] = true;
    if (a.data == nullptr) ir::fail(ErrorCode::InvalidArgument, what() + ": host data pointer is NULL");
    layouts_[static_cast<size_t>(a.stream)].check(what(), a.dtype, a.shape);
  }
  if (!required) return;
  for (size_t s = 0; s < graph_.num_streams(); ++s) {
    const ir::Stream& stream = graph_.stream(static_cast<ir::StreamId>(s));
    if (stream.direction == direction && !seen[s]) {
      ir::fail(ErrorCode::InvalidArgument, std::string(role) + " stream '" + stream.name +
                                               "' has no host array and no callback");
    }
  }
}

void Session::check_request(const RunRequest& request) const {
  std::vector<bool> seen(graph_.num_streams(), false);
  for (const auto& [id, cb] : request.callbacks) {
    const ir::Stream& s = graph_.stream(id);
    const bool h2d = s.direction == ir::StreamDirection::HostToDevice;
    if (static_cast<bool>(cb.fill) == static_cast<bool>(cb.deliver)) {
      ir::fail(ErrorCode::InvalidArgument, "callback for stream '" + s.name + "': give exactly one of fill and deliver");
    }
    if (h2d != static_cast<bool>(cb.fill)) {
      ir::fail(ErrorCode::InvalidArgument, "callback for stream '" + s.name + "': a " +
                                               (h2d ? "host-to-device stream needs a fill" : "device-to-host stream needs a deliver") +
                                               " callback");
    }
    seen[static_cast<size_t>(id)] = true;
  }
  std::vector<bool> outputs_seen = seen;
  for (const HostArray& a : request.inputs) {
    if (seen[static_cast<size_t>(a.stream)] && graph_.stream(a.stream).direction == ir::StreamDirection::HostToDevice) {
      ir::fail(ErrorCode::InvalidArgument, "input stream '" + graph_.stream(a.stream).name +
                                               "' has both a host array and a fill callback");
    }
  }
  for (const HostArray& a : request.outputs) {
    if (seen[static_cast<size_t>(a.stream)] && graph_.stream(a.stream).direction == ir::StreamDirection::DeviceToHost) {
      ir::fail(ErrorCode::InvalidArgument, "output stream '" + graph_.stream(a.stream).name +
                                               "' has both a host array and a deliver callback");
    }
  }
  check_arrays(request.inputs, ir::StreamDirection::HostToDevice, true, seen);
  check_arrays(request.outputs, ir::StreamDirection::DeviceToHost, false, outputs_seen);
}

std::unique_lock<std::recursive_mutex> Session::hold_runs() const { return variables_->hold(); }
size_t Session::num_devices() const { return storage_->num_devices(); }
const std::vector<std::string>& Session::notes() const { return devices_->notes(); }

const std::vector<std::string>& Session::warnings() const { return warnings_; }
DeviceMemoryStats Session::memory_stats(size_t device) const { return storage_->memory_stats(device); }
ir::Shape Session::variable_shape(ir::TensorId tensor) const { return variables_->variable_shape(tensor); }
VariableStorage Session::variable_storage(ir::TensorId tensor) const { return variables_->variable_storage(tensor); }
int64_t Session::variable_groups(ir::TensorId tensor) const { return variables_->variable_groups(tensor); }

void Session::read_variable(ir::TensorId tensor, std::span<std::byte> out) const {
  variables_->read_variable(tensor, out);
}

void Session::write_variable(ir::TensorId tensor, std::span<const std::byte> data) {
  variables_->write_variable(tensor, data);
}

void Session::read_variable_groups(ir::TensorId tensor, std::span<std::byte> out) const {
  variables_->read_variable_groups(tensor, out);
}

void Session::write_variable_groups(ir::TensorId tensor, std::span<const std::byte> data) {
  variables_->write_variable_groups(tensor, data);
}

void Session::read_remote_slot(ir::RemoteBufferId buffer, int64_t entry, std::span<std::byte> out) const {
  variables_->read_remote_slot(buffer, entry, out);
}

void Session::write_remote_slot(ir::RemoteBufferId buffer, int64_t entry, std::span<const std::byte> data) {
  variables_->write_remote_slot(buffer, entry, data);
}

}  // namespace plexus::session
