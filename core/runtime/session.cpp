#include "core/runtime/session.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "core/ir/error.h"
#include "core/replication/shard_layout.h"

namespace plexus::runtime {

using ir::ErrorCode;

/// What one device runs: its replica, the item list, and the per-stream host pointers of
/// the current step, which the copy items read through.
struct Session::DeviceState {
  VirtualDevice* device = nullptr;
  int64_t replica = 0;
  std::vector<Item> items;
  std::vector<std::byte*> host_slot;  ///< per stream
};

namespace {

void check_options(const SessionOptions& o) {
  if (o.device_iterations < 1) {
    ir::fail(ErrorCode::InvalidArgument, "session option device_iterations is " + std::to_string(o.device_iterations) +
                                             ", must be >= 1");
  }
  if (o.threads_per_device < 0) {
    ir::fail(ErrorCode::InvalidArgument, "session option threads_per_device is " +
                                             std::to_string(o.threads_per_device) + ", must be >= 0");
  }
  if (o.collective_timeout_ms < 1) {
    ir::fail(ErrorCode::InvalidArgument, "session option collective_timeout_ms is " +
                                             std::to_string(o.collective_timeout_ms) + ", must be >= 1");
  }
}

// The error a failed run reports: the first replica's that is not a consequence of
// another replica's failure (Cancelled), else the first.
std::exception_ptr primary_error(const std::vector<std::exception_ptr>& errors) {
  std::exception_ptr first;
  for (const std::exception_ptr& e : errors) {
    if (!e) continue;
    if (!first) first = e;
    try {
      std::rethrow_exception(e);
    } catch (const ir::Error& err) {
      if (err.code() != ErrorCode::Cancelled) return e;
    } catch (...) {
      return e;
    }
  }
  return first;
}

}  // namespace

Session::Session(const ir::Graph& graph, const SessionOptions& options)
    : graph_(graph), options_(options), program_(compile(graph_)) {
  check_options(options_);
  const int64_t replicas = graph_.replication_factor();
  const auto cores = static_cast<int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  if (options_.threads_per_device == 0) options_.threads_per_device = static_cast<int>(std::max<int64_t>(1, cores / replicas));
  const bool spin = replicas <= cores;  // measured: R=2 on 2 cores, 58k -> 101k samples/s (mnist, batch 4)
  const memory::MemoryPlan& plan = program_.plan;
  if (options_.device_memory_bytes != 0 && plan.arena_bytes > options_.device_memory_bytes) {
    ir::fail(ErrorCode::OutOfDeviceMemory,
             "device 0 needs " + std::to_string(plan.arena_bytes) + " bytes (variables and constants " +
                 std::to_string(plan.persistent_bytes) + ", peak live " + std::to_string(plan.peak_live_bytes) +
                 ") but its capacity (device_memory_bytes) is " + std::to_string(options_.device_memory_bytes));
  }
  const bool communicates = std::any_of(graph_.ops().begin(), graph_.ops().end(),
                                       [](const ir::Op& op) { return op.def->communicates; });
  if (replicas > 1 && communicates) {
    collectives_ = std::make_unique<Collectives>(options_.collectives_plugin, replicas, options_.collective_timeout_ms);
  }
  for (int64_t r = 0; r < replicas; ++r) {
    remote_.push_back(std::make_unique<memory::RemoteMemory>(graph_.remote_buffers()));
    devices_.push_back(std::make_unique<VirtualDevice>(static_cast<int>(r), plan.arena_bytes, spin));
    auto state = std::make_unique<DeviceState>();
    state->device = devices_.back().get();
    state->replica = r;
    build_device(*state, r);
    states_.push_back(std::move(state));
  }
  load_variables();
}

Session::~Session() = default;

void Session::build_device(DeviceState& state, int64_t replica) {
  std::byte* base = state.device->arena().data();
  const memory::MemoryPlan& plan = program_.plan;
  state.host_slot.assign(graph_.num_streams(), nullptr);
  auto buffer = [&](ir::TensorId t) { return base + program_.tensor_offset[static_cast<size_t>(t)]; };

  // Position 0: host-to-device loads.
  for (size_t s = 0; s < graph_.num_streams(); ++s) {
    const ir::Stream& stream = graph_.stream(static_cast<ir::StreamId>(s));
    if (stream.direction != ir::StreamDirection::HostToDevice) continue;
    state.items.push_back({[dst = buffer(stream.tensor), slot = &state.host_slot[s],
                            bytes = graph_.tensor(stream.tensor).bytes()] { std::memcpy(dst, *slot, bytes); },
                           plan.live_bytes[0]});
  }
  auto add_d2h_copies = [&](size_t position) {
    for (size_t s = 0; s < graph_.num_streams(); ++s) {
      const ir::Stream& stream = graph_.stream(static_cast<ir::StreamId>(s));
      if (stream.direction != ir::StreamDirection::DeviceToHost || d2h_position(stream) != position) continue;
      state.items.push_back({[src = buffer(stream.tensor), slot = &state.host_slot[s],
                              bytes = graph_.tensor(stream.tensor).bytes()] {
                               if (*slot) std::memcpy(*slot, src, bytes);
                             },
                             plan.live_bytes[position]});
    }
  };
  add_d2h_copies(0);
  for (size_t k = 0; k < program_.schedule.size(); ++k) {
    const ir::Op& op = graph_.op(program_.schedule[k]);
    ir::KernelContext ctx{.graph = graph_,
                          .op = op,
                          .scratch = op.scratch_bytes ? base + program_.scratch_offset[program_.schedule[k]] : nullptr,
                          .max_threads = options_.threads_per_device,
                          .replica = replica,
                          .replication_factor = graph_.replication_factor(),
                          .comm = collectives_ ? collectives_->communicator(replica) : nullptr,
                          .remote = remote_[static_cast<size_t>(replica)]->bases(),
                          .notes = replica == 0 ? &notes_ : nullptr};
    for (ir::TensorId t : op.inputs) {
      ctx.inputs.push_back(&graph_.tensor(t));
      ctx.in.push_back(buffer(t));
    }
    for (ir::TensorId t : op.outputs) {
      ctx.outputs.push_back(&graph_.tensor(t));
      ctx.out.push_back(buffer(t));
    }
    ir::Kernel kernel = op.def->kernel(ctx);
    if (kernel) state.items.push_back({std::move(kernel), plan.live_bytes[k + 1]});
    add_d2h_copies(k + 1);
  }
}

std::byte* Session::variable_buffer(ir::TensorId tensor, int64_t replica) const {
  const ir::TensorInfo& t = graph_.tensor(tensor);
  if (t.kind == ir::TensorKind::RemoteVariable) {
    return remote_[static_cast<size_t>(replica)]->slot(static_cast<size_t>(t.remote_buffer), t.remote_entry);
  }
  return devices_[static_cast<size_t>(replica)]->arena().data() + program_.tensor_offset[static_cast<size_t>(tensor)];
}

void Session::transfer_variable(const ir::TensorInfo& t, ir::TensorId tensor, std::byte* host, bool to_host) const {
  const replication::VariableLayout layout = replication::variable_layout(t);
  const size_t esize = ir::dtype_size(t.dtype);
  const int64_t row_numel = ir::numel(layout.row_shape);
  const size_t row_bytes = static_cast<size_t>(row_numel) * esize;
  if (to_host) {
    for (size_t row = 0; row < layout.row_sources.size(); ++row) {
      const std::vector<int64_t>& sources = layout.row_sources[row];
      for (size_t shard = 0; shard < sources.size(); ++shard) {
        replication::insert_shard(variable_buffer(tensor, sources[shard]), host + row * row_bytes, row_numel,
                                  layout.shard_over, static_cast<int64_t>(shard), esize);
      }
    }
    return;
  }
  for (int64_t r = 0; r < replication_factor(); ++r) {
    const auto row = static_cast<size_t>(layout.replica_row[static_cast<size_t>(r)]);
    replication::extract_shard(host + row * row_bytes, variable_buffer(tensor, r), row_numel, layout.shard_over,
                               layout.shard_index[static_cast<size_t>(r)], esize);
  }
}

void Session::load_variables() {
  for (size_t t = 0; t < graph_.num_tensors(); ++t) {
    const auto id = static_cast<ir::TensorId>(t);
    const ir::TensorInfo& info = graph_.tensor(id);
    if (info.kind == ir::TensorKind::Constant) {
      for (int64_t r = 0; r < replication_factor(); ++r) std::memcpy(variable_buffer(id, r), info.data.data(), info.bytes());
    } else if (info.kind == ir::TensorKind::Variable || info.kind == ir::TensorKind::RemoteVariable) {
      const replication::VariableLayout layout = replication::variable_layout(info);
      const size_t esize = ir::dtype_size(info.dtype);
      const int64_t row_numel = ir::numel(layout.row_shape);
      for (int64_t r = 0; r < replication_factor(); ++r) {
        const auto row = static_cast<size_t>(layout.initial_row[static_cast<size_t>(r)]);
        replication::extract_shard(info.data.data() + row * static_cast<size_t>(row_numel) * esize, variable_buffer(id, r),
                                   row_numel, layout.shard_over, layout.shard_index[static_cast<size_t>(r)], esize);
      }
    }
  }
  for (auto& device : devices_) device->arena().set_live_bytes(program_.plan.persistent_bytes);
}

ir::Shape Session::host_shape(ir::StreamId stream) const {
  const ir::Shape& stream_shape = graph_.tensor(graph_.stream(stream).tensor).shape;
  ir::Shape shape;
  shape.reserve(stream_shape.size() + 2);
  if (options_.device_iterations > 1) shape.push_back(options_.device_iterations);
  if (replication_factor() > 1) shape.push_back(replication_factor());
  shape.insert(shape.end(), stream_shape.begin(), stream_shape.end());
  return shape;
}

void Session::check_arrays(std::span<const HostArray> arrays, ir::StreamDirection direction, bool required) const {
  const char* role = direction == ir::StreamDirection::HostToDevice ? "input" : "output";
  std::vector<bool> seen(graph_.num_streams(), false);
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
    const ir::TensorInfo& t = graph_.tensor(s.tensor);
    if (a.dtype != t.dtype) {
      ir::fail(ErrorCode::DTypeMismatch, what() + ": host array is " + std::string(ir::dtype_name(a.dtype)) +
                                             ", expected " + std::string(ir::dtype_name(t.dtype)));
    }
    const ir::Shape expected = host_shape(a.stream);
    if (a.shape != expected) {
      ir::fail(ErrorCode::ShapeMismatch,
               what() + ": host array has shape " + ir::shape_string(a.shape) + ", expected " +
                   ir::shape_string(expected) + " ([device_iterations=" + std::to_string(options_.device_iterations) +
                   ", replication_factor=" + std::to_string(replication_factor()) + "] + stream shape " +
                   ir::shape_string(t.shape) + ", leading dims of 1 left out)");
    }
  }
  if (!required) return;
  for (size_t s = 0; s < graph_.num_streams(); ++s) {
    const ir::Stream& stream = graph_.stream(static_cast<ir::StreamId>(s));
    if (stream.direction == direction && !seen[s]) {
      ir::fail(ErrorCode::InvalidArgument, std::string(role) + " stream '" + stream.name + "' has no host array");
    }
  }
}

// One device's part of a run: every step's copies and kernels, on the device thread. A
// failure aborts the collectives first, so that no other replica waits for this one.
void Session::run_steps(DeviceState& st, std::span<const HostArray> inputs, std::span<const HostArray> outputs) {
  const int64_t replicas = replication_factor();
  memory::Arena& arena = st.device->arena();
  try {
    for (int64_t step = 0; step < options_.device_iterations; ++step) {
      for (const auto* arrays : {&inputs, &outputs}) {
        for (const HostArray& a : *arrays) {
          const size_t bytes = graph_.tensor(graph_.stream(a.stream).tensor).bytes();
          st.host_slot[static_cast<size_t>(a.stream)] =
              static_cast<std::byte*>(a.data) + bytes * static_cast<size_t>(step * replicas + st.replica);
        }
      }
      for (const Item& item : st.items) {
        item.fn();
        arena.set_live_bytes(item.live_bytes);
      }
    }
  } catch (const ir::Error& e) {
    arena.set_live_bytes(program_.plan.persistent_bytes);
    if (collectives_ && e.code() != ErrorCode::Cancelled) {
      collectives_->abort("replica " + std::to_string(st.replica) + " failed: " + e.what());
    }
    if (replicas > 1) ir::fail(e.code(), "replica " + std::to_string(st.replica) + ": " + e.what());
    throw;
  }
  arena.set_live_bytes(program_.plan.persistent_bytes);
}

void Session::run(std::span<const HostArray> inputs, std::span<const HostArray> outputs) {
  std::lock_guard lock(mutex_);
  check_arrays(inputs, ir::StreamDirection::HostToDevice, true);
  check_arrays(outputs, ir::StreamDirection::DeviceToHost, false);
  std::vector<std::function<void()>> work;
  work.reserve(states_.size());
  for (auto& state : states_) {
    work.emplace_back([this, st = state.get(), inputs, outputs] { run_steps(*st, inputs, outputs); });
    state->device->submit(work.back());
  }
  std::vector<std::exception_ptr> errors(states_.size());
  for (size_t d = 0; d < states_.size(); ++d) {
    try {
      states_[d]->device->wait();
    } catch (...) {
      errors[d] = std::current_exception();
    }
  }
  if (std::exception_ptr error = primary_error(errors)) {
    if (collectives_) collectives_->reset();
    std::rethrow_exception(error);
  }
}

const ir::TensorInfo& Session::variable(ir::TensorId tensor) const {
  const ir::TensorInfo& t = graph_.tensor(tensor);
  if (t.kind != ir::TensorKind::Variable && t.kind != ir::TensorKind::RemoteVariable) {
    ir::fail(ErrorCode::InvalidArgument, "tensor '" + t.name + "' is not a variable");
  }
  return t;
}

ir::Shape Session::variable_shape(ir::TensorId tensor) const {
  return replication::variable_layout(variable(tensor)).host_shape;
}

void Session::check_variable_bytes(const ir::TensorInfo& t, size_t bytes) const {
  const ir::Shape shape = replication::variable_layout(t).host_shape;
  const size_t expected = static_cast<size_t>(ir::numel(shape)) * ir::dtype_size(t.dtype);
  if (bytes != expected) {
    ir::fail(ErrorCode::InvalidArgument, "variable '" + t.name + "': host buffer is " + std::to_string(bytes) +
                                             " bytes, expected " + std::to_string(expected) + " for " +
                                             std::string(ir::dtype_name(t.dtype)) + ir::shape_string(shape) +
                                             (replication_factor() > 1 ? " (its retrieval mode's shape)" : ""));
  }
}

void Session::read_variable(ir::TensorId tensor, std::span<std::byte> out) const {
  std::lock_guard lock(mutex_);
  const ir::TensorInfo& t = variable(tensor);
  check_variable_bytes(t, out.size());
  transfer_variable(t, tensor, out.data(), true);
}

void Session::write_variable(ir::TensorId tensor, std::span<const std::byte> data) {
  std::lock_guard lock(mutex_);
  const ir::TensorInfo& t = variable(tensor);
  check_variable_bytes(t, data.size());
  transfer_variable(t, tensor, const_cast<std::byte*>(data.data()), false);
}

VariableStorage Session::variable_storage(ir::TensorId tensor) const {
  const ir::TensorInfo& t = variable(tensor);
  VariableStorage s;
  (t.kind == ir::TensorKind::RemoteVariable ? s.remote_bytes : s.device_bytes) = t.bytes();
  s.shard_over = t.sharding ? t.sharding->shard_over : 1;
  return s;
}

DeviceMemoryStats Session::memory_stats(size_t device) const {
  if (device >= devices_.size()) {
    ir::fail(ErrorCode::NotFound, "device " + std::to_string(device) + " does not exist (the session has " +
                                      std::to_string(devices_.size()) + ")");
  }
  const memory::Arena& arena = devices_[device]->arena();
  return DeviceMemoryStats{arena.capacity(),         program_.plan.persistent_bytes, arena.live_bytes(),
                           arena.peak_bytes(),       program_.plan.peak_live_bytes,  remote_[device]->bytes()};
}

}  // namespace plexus::runtime
