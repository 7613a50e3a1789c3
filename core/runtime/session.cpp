#include "core/runtime/session.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "core/ir/error.h"

namespace plexus::runtime {

using ir::ErrorCode;

/// What one device runs: the item list and the per-stream host pointers of the current
/// step, which the copy items read through.
struct Session::DeviceState {
  VirtualDevice* device = nullptr;
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
}

}  // namespace

Session::Session(const ir::Graph& graph, const SessionOptions& options)
    : graph_(graph), options_(options), program_(compile(graph_)) {
  check_options(options_);
  const size_t num_devices = 1;
  const auto cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (options_.threads_per_device == 0) {
    options_.threads_per_device = std::max(1, cores / static_cast<int>(num_devices));
  }
  const bool spin = static_cast<int>(num_devices) < cores;
  const memory::MemoryPlan& plan = program_.plan;
  if (options_.device_memory_bytes != 0 && plan.arena_bytes > options_.device_memory_bytes) {
    ir::fail(ErrorCode::OutOfDeviceMemory,
             "device 0 needs " + std::to_string(plan.arena_bytes) + " bytes (variables and constants " +
                 std::to_string(plan.persistent_bytes) + ", peak live " + std::to_string(plan.peak_live_bytes) +
                 ") but its capacity (device_memory_bytes) is " + std::to_string(options_.device_memory_bytes));
  }
  for (size_t d = 0; d < num_devices; ++d) {
    devices_.push_back(std::make_unique<VirtualDevice>(static_cast<int>(d), plan.arena_bytes, spin));
    auto state = std::make_unique<DeviceState>();
    state->device = devices_.back().get();
    build_device(*state, d == 0);
    states_.push_back(std::move(state));
  }
  load_variables();
}

Session::~Session() = default;

void Session::build_device(DeviceState& state, bool record_notes) {
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
    ir::KernelContext ctx{op, {}, {}, {}, {}, base + program_.scratch_offset[program_.schedule[k]],
                          options_.threads_per_device, record_notes ? &notes_ : nullptr};
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

void Session::load_variables() {
  for (size_t t = 0; t < graph_.num_tensors(); ++t) {
    const ir::TensorInfo& info = graph_.tensor(static_cast<ir::TensorId>(t));
    if (info.kind != ir::TensorKind::Variable && info.kind != ir::TensorKind::Constant) continue;
    for (auto& device : devices_) {
      std::memcpy(device->arena().data() + program_.tensor_offset[t], info.data.data(), info.data.size());
    }
  }
  for (auto& device : devices_) device->arena().set_live_bytes(program_.plan.persistent_bytes);
}

ir::Shape Session::host_shape(ir::StreamId stream) const {
  const ir::Stream& s = graph_.stream(stream);
  ir::Shape shape = graph_.tensor(s.tensor).shape;
  if (options_.device_iterations > 1) shape.insert(shape.begin(), options_.device_iterations);
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
    const bool leading = options_.device_iterations > 1;
    const bool shape_ok = a.shape.size() == t.shape.size() + (leading ? 1 : 0) &&
                          (!leading || a.shape[0] == options_.device_iterations) &&
                          std::equal(t.shape.begin(), t.shape.end(), a.shape.begin() + (leading ? 1 : 0));
    if (!shape_ok) {
      ir::fail(ErrorCode::ShapeMismatch,
               what() + ": host array has shape " + ir::shape_string(a.shape) + ", expected " +
                   ir::shape_string(host_shape(a.stream)) +
                   (leading ? " ([device_iterations=" + std::to_string(options_.device_iterations) +
                                  "] + stream shape " + ir::shape_string(t.shape) + ")"
                            : " (the stream shape; device_iterations is 1)"));
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

void Session::run(std::span<const HostArray> inputs, std::span<const HostArray> outputs) {
  std::lock_guard lock(mutex_);
  check_arrays(inputs, ir::StreamDirection::HostToDevice, true);
  check_arrays(outputs, ir::StreamDirection::DeviceToHost, false);
  const int64_t steps = options_.device_iterations;
  for (auto& state : states_) {
    DeviceState& st = *state;
    const std::function<void()> work = [&st, &inputs, &outputs, steps, this] {
      for (int64_t step = 0; step < steps; ++step) {
        for (const auto* arrays : {&inputs, &outputs}) {
          for (const HostArray& a : *arrays) {
            const size_t bytes = graph_.tensor(graph_.stream(a.stream).tensor).bytes();
            st.host_slot[static_cast<size_t>(a.stream)] = static_cast<std::byte*>(a.data) + bytes * step;
          }
        }
        memory::Arena& arena = st.device->arena();
        for (const Item& item : st.items) {
          item.fn();
          arena.set_live_bytes(item.live_bytes);
        }
      }
      st.device->arena().set_live_bytes(program_.plan.persistent_bytes);
    };
    st.device->execute(work);
  }
}

const ir::TensorInfo& Session::variable(ir::TensorId tensor) const {
  const ir::TensorInfo& t = graph_.tensor(tensor);
  if (t.kind != ir::TensorKind::Variable) {
    ir::fail(ErrorCode::InvalidArgument, "tensor '" + t.name + "' is not a variable");
  }
  return t;
}

ir::Shape Session::variable_shape(ir::TensorId tensor) const { return variable(tensor).shape; }

void Session::read_variable(ir::TensorId tensor, std::span<std::byte> out) const {
  std::lock_guard lock(mutex_);
  const ir::TensorInfo& t = variable(tensor);
  if (out.size() != t.bytes()) {
    ir::fail(ErrorCode::InvalidArgument, "variable '" + t.name + "': host buffer is " + std::to_string(out.size()) +
                                             " bytes, expected " + std::to_string(t.bytes()) + " for " +
                                             t.type_string());
  }
  std::memcpy(out.data(), devices_[0]->arena().data() + program_.tensor_offset[static_cast<size_t>(tensor)],
              out.size());
}

void Session::write_variable(ir::TensorId tensor, std::span<const std::byte> data) {
  std::lock_guard lock(mutex_);
  const ir::TensorInfo& t = variable(tensor);
  if (data.size() != t.bytes()) {
    ir::fail(ErrorCode::InvalidArgument, "variable '" + t.name + "': host buffer is " + std::to_string(data.size()) +
                                             " bytes, expected " + std::to_string(t.bytes()) + " for " +
                                             t.type_string());
  }
  for (auto& device : devices_) {
    std::memcpy(device->arena().data() + program_.tensor_offset[static_cast<size_t>(tensor)], data.data(),
                data.size());
  }
}

DeviceMemoryStats Session::memory_stats(size_t device) const {
  if (device >= devices_.size()) {
    ir::fail(ErrorCode::NotFound, "device " + std::to_string(device) + " does not exist (the session has " +
                                      std::to_string(devices_.size()) + ")");
  }
  const memory::Arena& arena = devices_[device]->arena();
  return DeviceMemoryStats{arena.capacity(), program_.plan.persistent_bytes, arena.live_bytes(), arena.peak_bytes(),
                           program_.plan.peak_live_bytes};
}

}  // namespace plexus::runtime
