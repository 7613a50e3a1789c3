#include "core/runtime/device_program.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "core/ir/error.h"
#include "core/ops/graph/bound_graph.h"
#include "core/ops/kernel_def.h"

namespace plexus::runtime {

using ir::ErrorCode;
using ir::Phase;

/// One executable piece of a step: a copy, a channel transfer or a kernel.
struct DeviceProgram::Item {
  ops::Kernel fn;
  size_t live_bytes = 0;  ///< bytes of the slot region live after it (from the stage's plan)
  bool traced = false;    ///< recorded as a span of `span` kind when profiling
  bool receive = false;   ///< waits for another device: not counted in the step's busy time
  size_t scratch = 0;     ///< op scratch live while it runs (the device's shared scratch area)
  SpanKind span = SpanKind::Transfer;
  int32_t op = -1;
};

/// The items of one step kind of one stage in one micro-batch slot (and, for a stage that
/// reads streams in place, one ring buffer index).
struct DeviceProgram::StepItems {
  std::vector<Item> items;
  size_t live_index = 0;  ///< this slot's entry in DeviceState::slot_live
};

/// What one device runs, and the cursor its items read while running.
struct DeviceProgram::DeviceState {
  VirtualDevice* device = nullptr;
  int64_t replica = 0;         ///< index among the hosted replicas
  int64_t global_replica = 0;  ///< replica index in the job (collectives, shards, groups)
  int64_t index = 0;           ///< device within the replica
  std::vector<compile::Step> steps;
  std::vector<std::array<std::vector<StepItems>, 3>> items;  ///< [stage][phase][slot * ring + ring index]
  size_t persistent_bytes = 0;
  std::vector<size_t> slot_live;  ///< bytes live in each (stage, slot) region
  size_t live_total = 0;
  int64_t iteration = 0, micro_batch = 0;
  int64_t micro_batch_counter = 0;  ///< KernelContext::micro_batch_counter
  ops::GraphBindings graph_bindings;  ///< KernelContext::graph_bindings: called graphs bound once here
  std::vector<Span> spans;

  void set_live(size_t index, size_t bytes) {
    live_total = live_total - slot_live[index] + bytes;
    slot_live[index] = bytes;
    device->arena().set_live_bytes(persistent_bytes + live_total);
  }
  void use_scratch(size_t bytes) { device->arena().set_live_bytes(persistent_bytes + live_total + bytes); }
  void clear_live() {
    std::fill(slot_live.begin(), slot_live.end(), 0);
    live_total = 0;
    device->arena().set_live_bytes(persistent_bytes);
  }
};

namespace {

SpanKind step_span(compile::StepKind k) {
  return k == compile::StepKind::Forward ? SpanKind::Forward : k == compile::StepKind::Backward ? SpanKind::Backward : SpanKind::Update;
}

}  // namespace

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

DeviceProgram::DeviceProgram(const DeviceResources& resources, const compile::Schedule& schedule, int64_t iterations)
    : r_(resources), iterations_(iterations) {
  const compile::Program& program = r_.program;
  for (int64_t r = 0; r < r_.hosted.count; ++r) {
    auto& channels = channels_.emplace_back();
    for (const compile::ChannelPlan& cp : program.channels) {
      channels.push_back(std::make_unique<streams::BoundedQueue>(
          "'" + r_.graph.tensor(cp.root).name + "' from stage " + std::to_string(cp.from_stage) + " to stage " +
              std::to_string(cp.to_stage) + " of replica " + std::to_string(r_.hosted.first + r),
          cp.bytes, static_cast<size_t>(program.micro_batches), r_.spin));
    }
  }
  stage_ring_.assign(program.stages.size(), 1);
  for (size_t s = 0; s < program.stages.size(); ++s) {
    for (const auto& [stream, last] : program.stages[s].in_place_last_use) stage_ring_[s] = r_.streams.ring(static_cast<size_t>(stream));
  }
  const int64_t per_replica = program.placement.num_devices;
  for (size_t d = 0; d < r_.storage.num_devices(); ++d) {
    auto state = std::make_unique<DeviceState>();
    state->device = &r_.storage.device(d);
    state->replica = static_cast<int64_t>(d) / per_replica;
    state->global_replica = r_.hosted.first + state->replica;
    state->index = static_cast<int64_t>(d) % per_replica;
    state->steps = schedule[static_cast<size_t>(state->index)];
    build_device(*state);
    state->clear_live();
    states_.push_back(std::move(state));
  }
}

DeviceProgram::~DeviceProgram() = default;

std::byte* DeviceProgram::slot_region(const DeviceState& state, int32_t stage, int64_t slot) const {
  const compile::StagePlan& sp = r_.program.stages[static_cast<size_t>(stage)];
  const compile::DevicePlan& dp = r_.program.devices[static_cast<size_t>(state.index)];
  return state.device->arena().data() + dp.slot_base.at(stage) + static_cast<size_t>(slot) * memory::align_up(sp.slot_plan.arena_bytes);
}

std::byte* DeviceProgram::slot_address(const DeviceState& state, int32_t stage, int64_t slot, ir::TensorId root) const {
  return slot_region(state, stage, slot) + r_.program.stages[static_cast<size_t>(stage)].slot_offset.at(root);
}

std::byte* DeviceProgram::tensor_address(const DeviceState& state, const StepPlace& p, ir::TensorId tensor) const {
  const compile::Program& program = r_.program;
  const ir::TensorId root = program.root_of[static_cast<size_t>(tensor)];
  const compile::StagePlan& sp = program.stages[static_cast<size_t>(p.stage)];
  for (const auto& [stream, last] : sp.in_place_last_use) {
    if (program.root_of[static_cast<size_t>(r_.graph.stream(stream).tensor)] == root) {
      return const_cast<std::byte*>(r_.streams.ring_buffer(static_cast<size_t>(stream), state.replica, p.ring_index));
    }
  }
  const compile::DevicePlan& dp = program.devices[static_cast<size_t>(state.index)];
  std::byte* base = state.device->arena().data();
  if (p.phase == Phase::Update) {
    if (auto it = sp.accumulator.find(root); it != sp.accumulator.end()) return base + it->second;
  }
  if (program.offloaded.count(root)) return slot_address(state, p.stage, p.slot, root);
  if (auto it = dp.persistent_offset.find(root); it != dp.persistent_offset.end()) return base + it->second;
  return slot_address(state, p.stage, p.slot, root);
}

void DeviceProgram::build_device(DeviceState& state) {
  const size_t num_stages = r_.program.stages.size();
  state.items.resize(num_stages);
  state.persistent_bytes = r_.program.devices[static_cast<size_t>(state.index)].persistent_bytes;
  for (size_t s = 0; s < num_stages; ++s) {
    const compile::StagePlan& sp = r_.program.stages[s];
    if (sp.device != state.index) continue;
    const size_t first_live = state.slot_live.size();
    state.slot_live.resize(first_live + static_cast<size_t>(sp.slots), 0);
    for (Phase phase : {Phase::Forward, Phase::Backward, Phase::Update}) {
      auto& lists = state.items[s][static_cast<size_t>(phase)];
      const int64_t slots = phase == Phase::Update ? 1 : sp.slots;
      const size_t ring = phase == Phase::Update ? 1 : stage_ring_[s];
      lists.resize(static_cast<size_t>(slots) * ring);
      for (int64_t k = 0; k < slots; ++k) {
        for (size_t b = 0; b < ring; ++b) {
          StepItems& list = lists[static_cast<size_t>(k) * ring + b];
          list.live_index = first_live + static_cast<size_t>(k);
          build_step(state, {static_cast<int32_t>(s), phase, k, b}, list.items);
        }
      }
    }
  }
}

void DeviceProgram::build_step(DeviceState& st, const StepPlace& p, std::vector<Item>& items) {
  const compile::StagePlan& sp = r_.program.stages[static_cast<size_t>(p.stage)];
  HostUpdate* hu = r_.host_update;
  if (p.phase == Phase::Update) {
    add_mean_scaling(st, p.stage, items);
    if (hu) {
      for (ir::OpId op : hu->posted_at_update(p.stage)) items.push_back(post_gradient(st, p, op));
    }
  }
  size_t position = sp.first_position[static_cast<size_t>(p.phase)];
  for (const compile::Action& a : sp.actions[static_cast<size_t>(p.phase)]) {
    Item item = action_item(st, p, a);
    const size_t live = sp.slot_plan.live_bytes.empty() ? 0 : sp.slot_plan.live_bytes[position];
    item.live_bytes = live;
    items.push_back(std::move(item));
    for (ir::OpId op : hu && a.kind == compile::ActionKind::RunOp ? hu->posted_after(a.index) : std::vector<ir::OpId>{}) {
      items.push_back(post_gradient(st, p, op));
      items.back().live_bytes = live;
    }
    for (const auto& [stream, last] : sp.in_place_last_use) {
      if (last != position) continue;
      items.push_back({[streams = &r_.streams, s = static_cast<size_t>(stream), replica = st.replica] {
                         streams->release(s, replica);
                       },
                       live});
    }
    ++position;
  }
}

void DeviceProgram::add_mean_scaling(const DeviceState& st, int32_t stage, std::vector<Item>& items) const {
  const int64_t micro_batches = r_.program.micro_batches;
  if (micro_batches <= 1) return;
  for (const auto& [root, offset] : r_.program.stages[static_cast<size_t>(stage)].accumulator) {
    auto* data = reinterpret_cast<float*>(st.device->arena().data() + offset);
    const auto n = static_cast<size_t>(ir::numel(r_.graph.tensor(root).shape));
    const float scale = 1.0f / static_cast<float>(micro_batches);
    items.push_back({[data, n, scale] {
                       for (size_t i = 0; i < n; ++i) data[i] *= scale;
                     },
                     0});
  }
}

DeviceProgram::Item DeviceProgram::action_item(DeviceState& st, const StepPlace& p, const compile::Action& a) {
  switch (a.kind) {
    case compile::ActionKind::LoadStream:
      return load_stream(st, p, a.index);
    case compile::ActionKind::StoreStream:
      return store_stream(st, p, a.index);
    case compile::ActionKind::Receive:
    case compile::ActionKind::Send:
      return channel_transfer(st, p, a);
    case compile::ActionKind::Accumulate:
      return accumulate(st, p, a.index);
    case compile::ActionKind::LoadOffloaded:
    case compile::ActionKind::StoreOffloaded:
      return offloaded_copy(st, p, a);
    case compile::ActionKind::RunOp:
      break;
  }
  return run_op(st, p, a.index);
}

DeviceProgram::Item DeviceProgram::load_stream(DeviceState& st, const StepPlace& p, int32_t stream) const {
  Item item;
  item.traced = true;
  const int64_t micro_batches = r_.program.micro_batches;
  const auto s = static_cast<size_t>(stream);
  if (r_.program.stages[static_cast<size_t>(p.stage)].in_place_last_use.count(stream)) {
    item.fn = [&st, streams = &r_.streams, s, micro_batches] {
      streams->acquire(s, st.replica, st.iteration * micro_batches + st.micro_batch);
    };
    return item;
  }
  item.fn = [&st, streams = &r_.streams, dst = tensor_address(st, p, r_.graph.stream(stream).tensor), s,
             micro_batches] { streams->load(s, st.replica, st.iteration * micro_batches + st.micro_batch, dst); };
  return item;
}

DeviceProgram::Item DeviceProgram::store_stream(DeviceState& st, const StepPlace& p, int32_t stream) const {
  Item item;
  item.traced = true;
  item.fn = [&st, streams = &r_.streams, src = tensor_address(st, p, r_.graph.stream(stream).tensor),
             s = static_cast<size_t>(stream), micro_batches = r_.program.micro_batches, update = p.phase == Phase::Update] {
    if (!streams->active(s)) return;
    streams->store(s, st.replica, update ? st.iteration : st.iteration * micro_batches + st.micro_batch, src);
  };
  return item;
}

DeviceProgram::Item DeviceProgram::channel_transfer(const DeviceState& st, const StepPlace& p, const compile::Action& a) const {
  streams::BoundedQueue* channel = channels_[static_cast<size_t>(st.replica)][static_cast<size_t>(a.index)].get();
  std::byte* data = tensor_address(st, p, r_.program.channels[static_cast<size_t>(a.index)].root);
  Item item;
  item.traced = true;
  if (a.kind == compile::ActionKind::Receive) {
    item.fn = [channel, data] { channel->pop(data); };
    item.receive = true;
  } else {
    item.fn = [channel, data] { channel->push(data); };
  }
  return item;
}

DeviceProgram::Item DeviceProgram::accumulate(DeviceState& st, const StepPlace& p, ir::TensorId tensor) const {
  const ir::TensorInfo& info = r_.graph.tensor(tensor);
  const compile::StagePlan& sp = r_.program.stages[static_cast<size_t>(p.stage)];
  Item item;
  item.fn = [&st, src = tensor_address(st, p, tensor), dst = st.device->arena().data() + sp.accumulator.at(tensor),
             n = static_cast<size_t>(ir::numel(info.shape)), bytes = info.bytes()] {
    if (st.micro_batch == 0) {
      std::memcpy(dst, src, bytes);
    } else {
      add_into(ir::DType::Float32, dst, src, n);
    }
  };
  return item;
}

DeviceProgram::Item DeviceProgram::offloaded_copy(const DeviceState& st, const StepPlace& p, const compile::Action& a) const {
  Item item;
  if (r_.host_update && r_.host_update->state(a.index) != nullptr) {  // the host update's: never on a device
    item.fn = [] {};
    return item;
  }
  std::byte* host = r_.storage.offloaded(st.replica) + r_.program.offloaded.at(a.index);
  std::byte* device = slot_address(st, p.stage, p.slot, a.index);
  const size_t bytes = r_.graph.tensor(a.index).bytes();
  if (a.kind == compile::ActionKind::LoadOffloaded) {
    item.fn = [host, device, bytes] { std::memcpy(device, host, bytes); };
  } else {
    item.fn = [host, device, bytes] { std::memcpy(host, device, bytes); };
  }
  item.traced = true;
  return item;
}

ops::KernelContext DeviceProgram::kernel_context(DeviceState& st, const StepPlace& p, const ir::Op& op) {
  std::byte* scratch = st.device->arena().data() + r_.program.devices[static_cast<size_t>(st.index)].scratch_offset;
  ops::KernelContext ctx{.graph = r_.graph,
                        .op = op,
                        .scratch = scratch,
                        .max_threads = r_.threads_per_device,
                        .replica = st.global_replica,
                        .replication_factor = r_.graph.replication_factor(),
                        .micro_batch_counter = &st.micro_batch_counter,
                        .comm = r_.collectives.empty()
                                    ? nullptr
                                    : r_.collectives[static_cast<size_t>(st.index)]->communicator(st.global_replica),
                        .remote = r_.storage.remote(st.replica).bases(),
                        .notes = st.replica == 0 ? &notes_ : nullptr,
                        .graph_bindings = &st.graph_bindings};
  for (ir::TensorId t : op.inputs) {
    ctx.inputs.push_back(&r_.graph.tensor(t));
    ctx.in.push_back(tensor_address(st, p, t));
  }
  for (ir::TensorId t : op.outputs) {
    ctx.outputs.push_back(&r_.graph.tensor(t));
    ctx.out.push_back(tensor_address(st, p, t));
  }
  return ctx;
}

DeviceProgram::Item DeviceProgram::kernel_item(ir::OpId id, ops::KernelContext ctx) const {
  const ir::Op& op = r_.graph.op(id);
  const size_t scratch = r_.program.op_scratch.at(static_cast<size_t>(id));
  if (scratch == 0) ctx.scratch = nullptr;
  Item item;
  item.op = id;
  item.fn = ops::kernel_def(op).kernel(ctx);
  item.scratch = scratch;
  return item;
}

DeviceProgram::Item DeviceProgram::run_op(DeviceState& st, const StepPlace& p, ir::OpId id) {
  const ir::Op& op = r_.graph.op(id);
  if (r_.host_update && r_.host_update->runs_on_host(id)) {  // wait for the host, take the new weight
    Item item;
    item.op = id;
    item.fn = [&st, hu = r_.host_update, id, weight = tensor_address(st, p, op.inputs[0])] {
      hu->wait_and_copy(id, st.iteration, weight);
    };
    item.receive = item.traced = true;
    return item;
  }
  Item item = kernel_item(id, kernel_context(st, p, op));
  item.traced = op.schema->communicates;
  item.span = SpanKind::Collective;
  if (!item.fn) item.fn = [] {};
  return item;
}

DeviceProgram::Item DeviceProgram::post_gradient(const DeviceState& st, const StepPlace& p, ir::OpId op) const {
  Item item;
  item.fn = [hu = r_.host_update, op, replica = st.global_replica,
             gradient = tensor_address(st, p, r_.host_update->gradient(op))] { hu->post(op, replica, gradient); };
  item.traced = true;
  return item;
}

void DeviceProgram::abort_all(const std::string& reason) {
  aborted_.store(true, std::memory_order_release);
  for (auto& c : r_.collectives) c->abort(reason);
  if (r_.host_update) r_.host_update->abort(reason);
  r_.streams.abort();
  for (auto& per_replica : channels_) {
    for (auto& channel : per_replica) channel->abort();
  }
}

void DeviceProgram::run_step(DeviceState& st, const compile::Step& step, int64_t iteration) {
  const bool update = step.kind == compile::StepKind::Update;
  st.iteration = iteration;
  st.micro_batch = update ? 0 : step.micro_batch;
  st.micro_batch_counter = first_micro_batch_ + iteration * r_.program.micro_batches + st.micro_batch;
  const compile::StagePlan& sp = r_.program.stages[static_cast<size_t>(step.stage)];
  const int64_t slot = update ? 0 : step.micro_batch % sp.slots;
  const auto ring = static_cast<int64_t>(update ? 1 : stage_ring_[static_cast<size_t>(step.stage)]);
  const auto list = static_cast<size_t>(slot * ring + (iteration * r_.program.micro_batches + step.micro_batch) % ring);
  const StepItems& si = st.items[static_cast<size_t>(step.stage)][static_cast<size_t>(step.kind)][list];
  if (r_.profile) {
    run_items_traced(st, si, step, iteration);
  } else {
    for (const Item& item : si.items) {
      if (item.scratch) st.use_scratch(item.scratch);
      item.fn();
      st.set_live(si.live_index, item.live_bytes);
    }
  }
  if (update || step.kind == compile::StepKind::Backward || !r_.program.training) st.set_live(si.live_index, 0);
}

void DeviceProgram::run_items_traced(DeviceState& st, const StepItems& si, const compile::Step& step, int64_t iteration) const {
  const auto stage = static_cast<int32_t>(step.stage);
  const auto micro_batch = static_cast<int32_t>(step.micro_batch);
  const auto iter = static_cast<int32_t>(iteration);
  int64_t begin = -1;
  for (const Item& item : si.items) {
    const int64_t t0 = trace_now();
    if (item.scratch) st.use_scratch(item.scratch);
    item.fn();
    st.set_live(si.live_index, item.live_bytes);
    if (!item.receive && begin < 0) begin = t0;
    if (item.traced) st.spans.push_back({item.span, stage, micro_batch, iter, item.op, t0, trace_now()});
  }
  const int64_t end = trace_now();
  const bool update = step.kind == compile::StepKind::Update;
  st.spans.push_back({step_span(step.kind), stage, update ? -1 : micro_batch, iter, -1, begin < 0 ? end : begin, end});
}

// One device's part of a run, on its thread. A failure aborts the collectives and the
// channels first, so that no other device waits for this one. A Cancelled error is the
// consequence of an abort, unless nothing aborted the run: then it is this device's own (a
// stream callback cancelled), and the others still wait for this device.
void DeviceProgram::run_device(DeviceState& st) {
  try {
    for (int64_t i = 0; i < iterations_; ++i) {
      for (const compile::Step& step : st.steps) run_step(st, step, i);
    }
  } catch (const ir::Error& e) {
    st.clear_live();
    const std::string replica = "replica " + std::to_string(st.global_replica);
    const std::string who = states_.size() == 1                      ? std::string()
                            : r_.program.placement.num_devices == 1 ? replica
                                                                    : replica + " device " + std::to_string(st.index);
    if (e.code() != ErrorCode::Cancelled || !aborted()) abort_all(who + " failed: " + e.what());
    if (!who.empty()) ir::fail(e.code(), who + ": " + e.what());
    throw;
  }
  st.clear_live();
}

std::vector<std::exception_ptr> DeviceProgram::run(int64_t first_micro_batch) {
  first_micro_batch_ = first_micro_batch;
  aborted_.store(false, std::memory_order_release);
  for (auto& per_replica : channels_) {
    for (auto& channel : per_replica) channel->reset();
  }
  std::vector<std::function<void()>> work;
  work.reserve(states_.size());
  for (auto& state : states_) {
    state->spans.clear();
    work.emplace_back([this, st = state.get()] { run_device(*st); });
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
  return errors;
}

std::vector<std::vector<Span>> DeviceProgram::take_spans() {
  std::vector<std::vector<Span>> out;
  for (auto& state : states_) out.push_back(std::move(state->spans));
  return out;
}

}  // namespace plexus::runtime
