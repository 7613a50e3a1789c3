#include "core/session/session.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <set>
#include <thread>

#include "core/ir/error.h"
#include "core/replication/shard_layout.h"
#include "core/replication/variable_layout.h"
#include "core/runtime/workers.h"
#include "core/compile/strategy.h"

namespace plexus::runtime {

using ir::ErrorCode;
using ir::Phase;

/// One executable piece of a step: a copy, a channel transfer or a kernel.
struct Session::Item {
  ir::Kernel fn;
  size_t live_bytes = 0;  ///< bytes of the slot region live after it (from the stage's plan)
  bool traced = false;    ///< recorded as a span of `span` kind when profiling
  bool receive = false;   ///< waits for another device: not counted in the step's busy time
  size_t scratch = 0;     ///< op scratch live while it runs (the device's shared scratch area)
  SpanKind span = SpanKind::Transfer;
  int32_t op = -1;
};

/// The items of one step kind of one stage in one micro-batch slot (and, for a stage that
/// reads streams in place, one ring buffer index).
struct Session::StepItems {
  std::vector<Item> items;
  size_t live_index = 0;  ///< this slot's entry in DeviceState::slot_live
};

/// What one device runs, and the cursor its items read while running.
struct Session::DeviceState {
  VirtualDevice* device = nullptr;
  int64_t replica = 0;         ///< index among the hosted replicas
  int64_t global_replica = 0;  ///< replica index in the job (collectives, shards, groups)
  int64_t index = 0;  ///< device within the replica
  std::vector<Step> steps;
  std::vector<std::array<std::vector<StepItems>, 3>> items;  ///< [stage][phase][slot]
  size_t persistent_bytes = 0;
  std::vector<size_t> slot_live;  ///< bytes live in each (stage, slot) region
  size_t live_total = 0;
  int64_t iteration = 0, micro_batch = 0;
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

constexpr size_t aligned(size_t n) { return (n + memory::kAlignment - 1) / memory::kAlignment * memory::kAlignment; }

void require_positive(const char* name, int64_t value) {
  if (value < 1) ir::fail(ErrorCode::InvalidArgument, std::string("session option ") + name + " is " + std::to_string(value) + ", must be >= 1");
}

void check_options(const SessionOptions& o) {
  require_positive("device_iterations", o.device_iterations);
  require_positive("gradient_accumulation", o.gradient_accumulation);
  require_positive("collective_timeout_ms", o.collective_timeout_ms);
  require_positive("output_return_period", o.output_return_period);
  require_positive("io_threads", o.io_threads);
  if (o.prefetch_depth < 0) {
    ir::fail(ErrorCode::InvalidArgument, "session option prefetch_depth is " + std::to_string(o.prefetch_depth) +
                                             ", must be >= 0");
  }
  if (o.num_workers < 0) {
    ir::fail(ErrorCode::InvalidArgument, "session option num_workers is " + std::to_string(o.num_workers) +
                                             ", must be >= 1, or 0 for the launcher's environment");
  }
  if (o.num_workers > 0 && (o.worker_index < 0 || o.worker_index >= o.num_workers)) {
    ir::fail(ErrorCode::InvalidArgument, "session option worker_index is " + std::to_string(o.worker_index) +
                                             ", must be in [0, num_workers = " + std::to_string(o.num_workers) + ")");
  }
  if (o.threads_per_device < 0) {
    ir::fail(ErrorCode::InvalidArgument, "session option threads_per_device is " +
                                             std::to_string(o.threads_per_device) + ", must be >= 0");
  }
  const auto mode = static_cast<int32_t>(o.output_mode);
  if (mode < 0 || mode > static_cast<int32_t>(OutputMode::Sum)) {
    ir::fail(ErrorCode::InvalidArgument, "session option output_mode is " + std::to_string(mode) +
                                             ", must be all (0), final (1), every_n (2) or sum (3)");
  }
  if (o.output_mode == OutputMode::EveryN && o.device_iterations % o.output_return_period != 0) {
    ir::fail(ErrorCode::InvalidArgument, "session option output_return_period is " +
                                             std::to_string(o.output_return_period) +
                                             ", must divide device_iterations (" + std::to_string(o.device_iterations) +
                                             ") for output mode every_n");
  }
}

// The error a failed run reports: the first device's that is not a consequence of another
// device's failure (Cancelled), else the first.
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

SpanKind step_span(StepKind k) {
  return k == StepKind::Forward ? SpanKind::Forward : k == StepKind::Backward ? SpanKind::Backward : SpanKind::Update;
}

// A replica of `range` holding shard `shard` of row `row` of `layout`: the row's own source
// when in range, else the lowest one with that row and shard; -1 when none is.
int64_t holder(const replication::VariableLayout& layout, size_t row, size_t shard, const HostedReplicas& range) {
  const int64_t source = layout.row_sources[row][shard];
  if (range.hosts(source)) return source;
  for (int64_t r = range.first; r < range.first + range.count; ++r) {
    const auto i = static_cast<size_t>(r);
    if (static_cast<size_t>(layout.replica_row[i]) == row && layout.shard_index[i] == static_cast<int64_t>(shard)) {
      return r;
    }
  }
  return -1;
}

// The replicas worker `worker_index` of `num_workers` hosts (seed 002).
HostedReplicas hosted_by_worker(const SessionOptions& o, int64_t replication_factor) {
  if (replication_factor % o.num_workers != 0) {
    ir::fail(ErrorCode::InvalidArgument, "session option num_workers is " + std::to_string(o.num_workers) +
                                             ", which does not divide the replication factor " +
                                             std::to_string(replication_factor) +
                                             " (every worker hosts the same number of replicas)");
  }
  const int64_t count = replication_factor / o.num_workers;
  return {o.worker_index * count, count};
}

}  // namespace

Session::Session(const ir::Graph& graph, const SessionOptions& options) : graph_(graph), options_(options) {
  check_options(options_);
  if (options_.num_workers == 0) {
    const WorkerPlace place = workers_from_environment();
    options_.num_workers = place.count;
    options_.worker_index = place.index;
  }
  hosted_ = hosted_by_worker(options_, graph_.replication_factor());
  const Placement placement = place(graph_, options_.stages);
  program_.placement = placement;
  program_.training = is_training(graph_);
  program_.micro_batches = program_.training ? options_.gradient_accumulation
                                             : options_.device_iterations * options_.gradient_accumulation;
  iterations_ = program_.training ? options_.device_iterations : 1;
  make_schedule();
  const ScheduleAnalysis analysis = check_schedule(
      {placement.num_stages, placement.num_devices, placement.stage_device, program_.micro_batches, program_.training},
      schedule_, strategy_name_);
  std::set<ir::TensorId> in_place;
  for (size_t i = 0; i < graph_.num_streams(); ++i) {
    const auto id = static_cast<ir::StreamId>(i);
    if (reads_in_place(graph_, id, options_.prefetch_depth)) in_place.insert(graph_.storage_root(graph_.stream(id).tensor));
  }
  // The host update keeps the optimizer state in host memory: offloaded, never staged.
  const bool offload = options_.offload_optimizer_state || options_.weight_update_on_host;
  program_ = compile(graph_, placement, {program_.micro_batches, analysis.slots, offload, in_place});
  check_memory();

  const int64_t replicas = hosted_.count;
  const int64_t per_replica = placement.num_devices;
  const int64_t total = replicas * per_replica;
  const auto cores = static_cast<int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  if (options_.threads_per_device == 0) options_.threads_per_device = static_cast<int>(std::max<int64_t>(1, cores / total));
  const bool spin = total <= cores;  // measured: R=2 on 2 cores, 58k -> 101k samples/s (mnist, batch 4)
  const bool communicates = std::any_of(graph_.ops().begin(), graph_.ops().end(),
                                       [](const ir::Op& op) { return op.def->communicates; });
  if (replication_factor() > 1 && communicates) {
    for (int64_t d = 0; d < per_replica; ++d) {
      collectives_.push_back(std::make_unique<Collectives>(options_.collectives_plugin, replication_factor(), hosted_.first,
                                                           hosted_.count, options_.collective_timeout_ms));
    }
  }
  if (options_.weight_update_on_host && program_.training) {
    host_update_ = std::make_unique<HostUpdate>(graph_, program_, replication_factor(), hosted_.first, hosted_.count,
                                                replication_factor() > 1 ? &host_collectives() : nullptr,
                                                [this](ir::TensorId t, int64_t r) { return variable_buffer(t, r); });
  }
  // The host update keeps its optimizer state once per worker: no per-replica copies.
  const bool host_state_only = host_update_ && std::all_of(program_.offloaded.begin(), program_.offloaded.end(),
                                                           [&](const auto& o) { return host_update_->state(o.first); });
  for (int64_t r = 0; r < replicas; ++r) {
    remote_.push_back(std::make_unique<memory::RemoteMemory>(graph_.remote_buffers()));
    offloaded_.emplace_back(host_state_only ? 0 : program_.offloaded_bytes);
    auto& channels = channels_.emplace_back();
    for (size_t c = 0; c < program_.channels.size(); ++c) {
      const ChannelPlan& cp = program_.channels[c];
      channels.push_back(std::make_unique<streams::BoundedQueue>(
          "'" + graph_.tensor(cp.root).name + "' from stage " + std::to_string(cp.from_stage) + " to stage " +
              std::to_string(cp.to_stage) + " of replica " + std::to_string(hosted_.first + r),
          cp.bytes, static_cast<size_t>(program_.micro_batches), spin));
    }
  }
  std::vector<int64_t> held(graph_.num_streams(), 0);  // in-place streams: micro-batches their stage holds
  for (const StagePlan& sp : program_.stages) {
    for (const auto& [stream, last] : sp.in_place_last_use) held[static_cast<size_t>(stream)] = sp.slots;
  }
  streams_ = std::make_unique<StreamBinding>(graph_, replicas, options_.prefetch_depth, options_.io_threads, spin, held);
  stage_ring_.assign(program_.stages.size(), 1);
  for (size_t s = 0; s < program_.stages.size(); ++s) {
    for (const auto& [stream, last] : program_.stages[s].in_place_last_use) stage_ring_[s] = streams_->ring(static_cast<size_t>(stream));
  }
  for (size_t i = 0; i < graph_.num_streams(); ++i) {
    const auto id = static_cast<ir::StreamId>(i);
    const bool d2h = graph_.stream(id).direction == ir::StreamDirection::DeviceToHost;
    stream_items_.push_back(d2h && output_layout(id).micro_batches == 1
                                ? options_.device_iterations
                                : options_.device_iterations * options_.gradient_accumulation);
    stream_accumulates_.push_back(d2h && options_.output_mode == OutputMode::Sum);
  }
  for (int64_t r = 0; r < replicas; ++r) {
    for (int64_t d = 0; d < per_replica; ++d) {
      const DevicePlan& plan = program_.devices[static_cast<size_t>(d)];
      devices_.push_back(std::make_unique<VirtualDevice>(static_cast<int>(r * per_replica + d), plan.arena_bytes, spin));
      auto state = std::make_unique<DeviceState>();
      state->device = devices_.back().get();
      state->replica = r;
      state->global_replica = hosted_.first + r;
      state->index = d;
      state->steps = schedule_[static_cast<size_t>(d)];
      build_device(*state);
      states_.push_back(std::move(state));
    }
  }
  load_variables();
  controller_ = std::thread([this] { controller_loop(); });
}

Session::~Session() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    ++cancel_generation_;
    if (running_) abort_all("the session is being destroyed");
  }
  jobs_changed_.notify_all();
  controller_.join();
}

void Session::make_schedule() {
  const Placement& pl = program_.placement;
  const ScheduleProblem problem{pl.num_stages, pl.num_devices, pl.stage_device, program_.micro_batches,
                                program_.training};
  strategy_name_ = options_.execution_strategy;
  if (strategy_name_.empty() && pl.num_devices == 1) {
    strategy_name_ = "trivial";
    schedule_ = trivial_schedule(problem);
    return;
  }
  if (strategy_name_.empty()) strategy_name_ = "pipelined";
  const Strategy strategy(strategy_name_);
  schedule_ = strategy.schedule(problem, options_.strategy_options);
}

void Session::check_memory() const {
  if (options_.device_memory_bytes == 0) return;
  for (size_t d = 0; d < program_.devices.size(); ++d) {
    const DevicePlan& p = program_.devices[d];
    if (p.arena_bytes <= options_.device_memory_bytes) continue;
    ir::fail(ErrorCode::OutOfDeviceMemory,
             "device " + std::to_string(d) + " needs " + std::to_string(p.arena_bytes) +
                 " bytes (variables, constants and accumulators " + std::to_string(p.persistent_bytes) +
                 ", planned peak " + std::to_string(p.planned_peak_bytes) +
                 ") but its capacity (device_memory_bytes) is " + std::to_string(options_.device_memory_bytes));
  }
}

std::byte* Session::slot_region(const DeviceState& state, int32_t stage, int64_t slot) const {
  const StagePlan& sp = program_.stages[static_cast<size_t>(stage)];
  const DevicePlan& dp = program_.devices[static_cast<size_t>(state.index)];
  return state.device->arena().data() + dp.slot_base.at(stage) + static_cast<size_t>(slot) * aligned(sp.slot_plan.arena_bytes);
}

std::byte* Session::slot_address(const DeviceState& state, int32_t stage, int64_t slot, ir::TensorId root) const {
  return slot_region(state, stage, slot) + program_.stages[static_cast<size_t>(stage)].slot_offset.at(root);
}

std::byte* Session::tensor_address(const DeviceState& state, int32_t stage, Phase phase, int64_t slot, size_t ring_index,
                                   ir::TensorId tensor) const {
  const ir::TensorId root = program_.root_of[static_cast<size_t>(tensor)];
  const StagePlan& sp = program_.stages[static_cast<size_t>(stage)];
  for (const auto& [stream, last] : sp.in_place_last_use) {
    if (program_.root_of[static_cast<size_t>(graph_.stream(stream).tensor)] == root) {
      return const_cast<std::byte*>(streams_->ring_buffer(static_cast<size_t>(stream), state.replica, ring_index));
    }
  }
  const DevicePlan& dp = program_.devices[static_cast<size_t>(state.index)];
  std::byte* base = state.device->arena().data();
  if (phase == Phase::Update) {
    if (auto it = sp.accumulator.find(root); it != sp.accumulator.end()) return base + it->second;
  }
  if (program_.offloaded.count(root)) return slot_address(state, stage, slot, root);
  if (auto it = dp.persistent_offset.find(root); it != dp.persistent_offset.end()) return base + it->second;
  return slot_address(state, stage, slot, root);
}

void Session::build_device(DeviceState& state) {
  const size_t num_stages = program_.stages.size();
  state.items.resize(num_stages);
  state.persistent_bytes = program_.devices[static_cast<size_t>(state.index)].persistent_bytes;
  for (size_t s = 0; s < num_stages; ++s) {
    const StagePlan& sp = program_.stages[s];
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
          build_step(state, static_cast<int32_t>(s), phase, k, b, list.items);
        }
      }
    }
  }
}

OutputLayout Session::output_layout(ir::StreamId stream) const {
  const ir::TensorId root = program_.root_of[static_cast<size_t>(graph_.stream(stream).tensor)];
  const ir::OpId producer = graph_.tensor(root).producer;
  const bool per_update = producer >= 0 && graph_.op(producer).phase == Phase::Update;
  return OutputLayout{options_.output_mode, options_.output_return_period, options_.device_iterations,
                      per_update ? 1 : options_.gradient_accumulation, hosted_.count};
}

void Session::build_step(DeviceState& st, int32_t stage, Phase phase, int64_t slot, size_t ring_index, std::vector<Item>& items) {
  const StagePlan& sp = program_.stages[static_cast<size_t>(stage)];
  const auto& actions = sp.actions[static_cast<size_t>(phase)];
  const int64_t replica = st.replica;
  const int64_t micro_batches = program_.micro_batches;
  auto address = [&](ir::TensorId t) { return tensor_address(st, stage, phase, slot, ring_index, t); };
  if (phase == Phase::Update && micro_batches > 1) {  // accumulated sums -> means, once per update
    for (const auto& [root, offset] : sp.accumulator) {
      auto* data = reinterpret_cast<float*>(st.device->arena().data() + offset);
      const auto n = static_cast<size_t>(ir::numel(graph_.tensor(root).shape));
      const float scale = 1.0f / static_cast<float>(micro_batches);
      items.push_back({[data, n, scale] {
                         for (size_t i = 0; i < n; ++i) data[i] *= scale;
                       },
                       0});
    }
  }
  if (phase == Phase::Update && host_update_) {
    for (ir::OpId op : host_update_->posted_at_update(stage)) items.push_back(post_gradient(st, op, address(host_update_->gradient(op))));
  }
  size_t position = sp.first_position[static_cast<size_t>(phase)];
  for (const Action& a : actions) {
    Item item;
    item.live_bytes = sp.slot_plan.live_bytes.empty() ? 0 : sp.slot_plan.live_bytes[position];
    switch (a.kind) {
      case ActionKind::LoadStream: {
        if (sp.in_place_last_use.count(a.index)) {
          item.fn = [&st, streams = streams_.get(), s = static_cast<size_t>(a.index), replica, micro_batches] {
            streams->acquire(s, replica, st.iteration * micro_batches + st.micro_batch);
          };
          item.traced = true;
          break;
        }
        const ir::TensorId t = graph_.stream(a.index).tensor;
        item.fn = [&st, streams = streams_.get(), dst = address(t), s = static_cast<size_t>(a.index), replica,
                   micro_batches] { streams->load(s, replica, st.iteration * micro_batches + st.micro_batch, dst); };
        item.traced = true;
        break;
      }
      case ActionKind::StoreStream: {
        const ir::TensorId t = graph_.stream(a.index).tensor;
        item.fn = [&st, streams = streams_.get(), src = address(t), s = static_cast<size_t>(a.index),
                   layout = output_layout(a.index), replica, micro_batches, update = phase == Phase::Update] {
          if (!streams->active(s)) return;
          const int64_t k = update ? st.iteration : st.iteration * micro_batches + st.micro_batch;
          streams->store(s, replica, layout.row(k / layout.micro_batches, k % layout.micro_batches, replica), src);
        };
        item.traced = true;
        break;
      }
      case ActionKind::Receive: {
        streams::BoundedQueue* channel = channels_[static_cast<size_t>(replica)][static_cast<size_t>(a.index)].get();
        item.fn = [channel, dst = address(program_.channels[static_cast<size_t>(a.index)].root)] { channel->pop(dst); };
        item.traced = item.receive = true;
        break;
      }
      case ActionKind::Send: {
        streams::BoundedQueue* channel = channels_[static_cast<size_t>(replica)][static_cast<size_t>(a.index)].get();
        item.fn = [channel, src = address(program_.channels[static_cast<size_t>(a.index)].root)] { channel->push(src); };
        item.traced = true;
        break;
      }
      case ActionKind::Accumulate: {
        const ir::TensorInfo& info = graph_.tensor(a.index);
        item.fn = [&st, src = address(a.index), dst = st.device->arena().data() + sp.accumulator.at(a.index),
                   n = static_cast<size_t>(ir::numel(info.shape)), bytes = info.bytes()] {
          if (st.micro_batch == 0) {
            std::memcpy(dst, src, bytes);
          } else {
            add_into(ir::DType::Float32, dst, src, n);
          }
        };
        break;
      }
      case ActionKind::LoadOffloaded:
      case ActionKind::StoreOffloaded: {
        if (host_update_ && host_update_->state(a.index) != nullptr) {  // the host update's: never on a device
          item.fn = [] {};
          break;
        }
        std::byte* host = offloaded_[static_cast<size_t>(replica)].data() + program_.offloaded.at(a.index);
        std::byte* device = slot_address(st, stage, slot, a.index);
        const size_t bytes = graph_.tensor(a.index).bytes();
        if (a.kind == ActionKind::LoadOffloaded) {
          item.fn = [host, device, bytes] { std::memcpy(device, host, bytes); };
        } else {
          item.fn = [host, device, bytes] { std::memcpy(host, device, bytes); };
        }
        item.traced = true;
        break;
      }
      case ActionKind::RunOp: {
        const ir::Op& op = graph_.op(a.index);
        if (host_update_ && host_update_->runs_on_host(a.index)) {  // wait for the host, take the new weight
          item.fn = [&st, hu = host_update_.get(), op = a.index, weight = address(op.inputs[0])] {
            hu->wait_and_copy(op, st.iteration, weight);
          };
          item.receive = item.traced = true;
          item.op = a.index;
          break;
        }
        ir::KernelContext ctx{.graph = graph_,
                              .op = op,
                              .scratch = op.scratch_bytes ? st.device->arena().data() + program_.devices[static_cast<size_t>(st.index)].scratch_offset : nullptr,
                              .max_threads = options_.threads_per_device,
                              .replica = st.global_replica,
                              .replication_factor = replication_factor(),
                              .comm = collectives_.empty() ? nullptr
                                                           : collectives_[static_cast<size_t>(st.index)]->communicator(st.global_replica),
                              .remote = remote_[static_cast<size_t>(replica)]->bases(),
                              .notes = replica == 0 ? &notes_ : nullptr};
        for (ir::TensorId t : op.inputs) {
          ctx.inputs.push_back(&graph_.tensor(t));
          ctx.in.push_back(address(t));
        }
        for (ir::TensorId t : op.outputs) {
          ctx.outputs.push_back(&graph_.tensor(t));
          ctx.out.push_back(address(t));
        }
        item.fn = op.def->kernel(ctx);
        item.scratch = op.scratch_bytes;
        item.traced = op.def->communicates;
        item.span = SpanKind::Collective;
        item.op = a.index;
        if (!item.fn) item.fn = [] {};
        break;
      }
    }
    const size_t live = item.live_bytes;
    items.push_back(std::move(item));
    if (a.kind == ActionKind::RunOp && host_update_) {
      for (ir::OpId op : host_update_->posted_after(a.index)) {
        items.push_back(post_gradient(st, op, address(host_update_->gradient(op))));
        items.back().live_bytes = live;
      }
    }
    for (const auto& [stream, last] : sp.in_place_last_use) {
      if (last != position) continue;
      items.push_back({[streams = streams_.get(), s = static_cast<size_t>(stream), replica] { streams->release(s, replica); }, live});
    }
    ++position;
  }
}

Session::Item Session::post_gradient(const DeviceState& st, ir::OpId op, const std::byte* gradient) const {
  Item item;
  item.fn = [hu = host_update_.get(), op, replica = st.global_replica, gradient] { hu->post(op, replica, gradient); };
  item.traced = true;
  return item;
}

std::byte* Session::variable_buffer(ir::TensorId tensor, int64_t global_replica) const {
  const ir::TensorInfo& t = graph_.tensor(tensor);
  const int64_t replica = global_replica - hosted_.first;
  if (t.kind == ir::TensorKind::RemoteVariable) {
    return remote_[static_cast<size_t>(replica)]->slot(static_cast<size_t>(t.remote_buffer), t.remote_entry);
  }
  if (std::byte* host = host_update_ ? host_update_->state(tensor) : nullptr) return host;
  if (auto it = program_.offloaded.find(tensor); it != program_.offloaded.end()) {
    return const_cast<std::byte*>(offloaded_[static_cast<size_t>(replica)].data()) + it->second;
  }
  const int64_t device = program_.stages[static_cast<size_t>(program_.home_stage.at(tensor))].device;
  return devices_[static_cast<size_t>(replica * devices_per_replica() + device)]->arena().data() +
         program_.devices[static_cast<size_t>(device)].persistent_offset.at(tensor);
}

void Session::transfer_variable(const ir::TensorInfo& t, ir::TensorId tensor, std::byte* host, bool to_host) const {
  transfer_variable(replication::variable_layout(t), t, tensor, host, to_host);
}

replication::VariableLayout Session::group_layout(const ir::TensorInfo& t) {
  ir::TensorInfo one_per_group = t;
  one_per_group.retrieval = ir::RetrievalMode::OnePerGroup;
  return replication::variable_layout(one_per_group);
}

int64_t Session::variable_groups(ir::TensorId tensor) const { return variable(tensor).grouping->num_groups(); }

void Session::read_variable_groups(ir::TensorId tensor, std::span<std::byte> out) const {
  std::lock_guard lock(variables_mutex_);
  const ir::TensorInfo& t = variable(tensor);
  const replication::VariableLayout layout = group_layout(t);
  check_group_bytes(t, layout, out.size());
  transfer_variable(layout, t, tensor, out.data(), true);
}

void Session::write_variable_groups(ir::TensorId tensor, std::span<const std::byte> data) {
  std::lock_guard lock(variables_mutex_);
  const ir::TensorInfo& t = variable(tensor);
  const replication::VariableLayout layout = group_layout(t);
  check_group_bytes(t, layout, data.size());
  transfer_variable(layout, t, tensor, const_cast<std::byte*>(data.data()), false);
  refresh_host_weights(tensor);
}

void Session::transfer_remote_slot(ir::RemoteBufferId buffer, int64_t entry, std::byte* host, size_t bytes, bool to_host) const {
  const ir::RemoteBuffer& b = graph_.remote_buffer(buffer);
  if (entry < 0 || entry >= b.entries) {
    ir::fail(ErrorCode::InvalidArgument, "remote buffer " + std::to_string(buffer) + ": slot " + std::to_string(entry) +
                                             " is not in [0, " + std::to_string(b.entries) + ")");
  }
  const size_t slot = static_cast<size_t>(ir::numel(b.shape)) * ir::dtype_size(b.dtype);
  if (bytes != slot * static_cast<size_t>(hosted_.count)) {
    ir::fail(ErrorCode::InvalidArgument, "remote buffer " + std::to_string(buffer) + ": host buffer is " + std::to_string(bytes) +
                                             " bytes, expected " + std::to_string(slot * static_cast<size_t>(hosted_.count)) +
                                             " ([hosted replicas] + slot shape)");
  }
  for (int64_t r = 0; r < hosted_.count; ++r) {
    std::byte* device = remote_[static_cast<size_t>(r)]->slot(static_cast<size_t>(buffer), entry);
    std::byte* row = host + static_cast<size_t>(r) * slot;
    if (to_host) {
      std::memcpy(row, device, slot);
    } else {
      std::memcpy(device, row, slot);
    }
  }
}

void Session::read_remote_slot(ir::RemoteBufferId buffer, int64_t entry, std::span<std::byte> out) const {
  std::lock_guard lock(variables_mutex_);
  transfer_remote_slot(buffer, entry, out.data(), out.size(), true);
}

void Session::write_remote_slot(ir::RemoteBufferId buffer, int64_t entry, std::span<const std::byte> data) {
  std::lock_guard lock(variables_mutex_);
  transfer_remote_slot(buffer, entry, const_cast<std::byte*>(data.data()), data.size(), false);
}

void Session::transfer_variable(const replication::VariableLayout& layout, const ir::TensorInfo& t, ir::TensorId tensor,
                                std::byte* host, bool to_host) const {
  const size_t esize = ir::dtype_size(t.dtype);
  const int64_t row_numel = ir::numel(layout.row_shape);
  const size_t row_bytes = static_cast<size_t>(row_numel) * esize;
  if (to_host) {
    const std::vector<std::byte> gathered =
        read_needs_every_worker(layout) ? gather_replicas(t, tensor) : std::vector<std::byte>();
    for (size_t row = 0; row < layout.row_sources.size(); ++row) {
      const std::vector<int64_t>& sources = layout.row_sources[row];
      for (size_t shard = 0; shard < sources.size(); ++shard) {
        const std::byte* source =
            gathered.empty() ? variable_buffer(tensor, holder(layout, row, shard, hosted_))
                             : gathered.data() + static_cast<size_t>(sources[shard]) * t.bytes();
        replication::insert_shard(source, host + row * row_bytes, row_numel, layout.shard_over,
                                  static_cast<int64_t>(shard), esize);
      }
    }
    return;
  }
  for (int64_t r = hosted_.first; r < hosted_.first + hosted_.count; ++r) {
    const auto row = static_cast<size_t>(layout.replica_row[static_cast<size_t>(r)]);
    replication::extract_shard(host + row * row_bytes, variable_buffer(tensor, r), row_numel, layout.shard_over,
                               layout.shard_index[static_cast<size_t>(r)], esize);
  }
}

Collectives& Session::host_collectives() const {
  if (!host_collectives_) {
    host_collectives_ = std::make_unique<Collectives>(options_.collectives_plugin, replication_factor(), hosted_.first,
                                                      hosted_.count, options_.collective_timeout_ms, true);
  }
  return *host_collectives_;
}

bool Session::read_needs_every_worker(const replication::VariableLayout& layout) const {
  for (int64_t w = 0; w < options_.num_workers && options_.num_workers > 1; ++w) {
    const HostedReplicas worker{w * hosted_.count, hosted_.count};
    for (size_t row = 0; row < layout.row_sources.size(); ++row) {
      for (size_t shard = 0; shard < layout.row_sources[row].size(); ++shard) {
        if (holder(layout, row, shard, worker) < 0) return true;
      }
    }
  }
  return false;
}

std::vector<std::byte> Session::gather_replicas(const ir::TensorInfo& t, ir::TensorId tensor) const {
  const size_t bytes = t.bytes();
  if (bytes % sizeof(int32_t) != 0) {  // the plugins move float32 / int32 elements
    ir::fail(ErrorCode::Unsupported, "variable '" + t.name + "': reading it needs the replicas of every worker, "
                                         "gathered as 4-byte words, and its " + std::to_string(bytes) +
                                         " bytes per replica are not a multiple of 4");
  }
  Collectives& collectives = host_collectives();
  const std::vector<int64_t>& everyone = collectives.everyone();
  std::vector<std::vector<std::byte>> gathered(static_cast<size_t>(hosted_.count));
  collectives.each_hosted([&](replication::Communicator& comm, size_t local) {
    gathered[local].resize(everyone.size() * bytes);
    comm.all_gather(everyone, variable_buffer(tensor, hosted_.first + static_cast<int64_t>(local)),
                    gathered[local].data(), bytes / sizeof(int32_t), ir::DType::Int32);
  });
  return std::move(gathered.front());
}

void Session::load_variables() {
  for (size_t t = 0; t < graph_.num_tensors(); ++t) {
    const auto id = static_cast<ir::TensorId>(t);
    const ir::TensorInfo& info = graph_.tensor(id);
    if (info.kind == ir::TensorKind::Constant) {  // on every device whose stages use it
      for (const auto& state : states_) {
        const DevicePlan& plan = program_.devices[static_cast<size_t>(state->index)];
        if (auto it = plan.persistent_offset.find(id); it != plan.persistent_offset.end()) {
          std::memcpy(state->device->arena().data() + it->second, info.data.data(), info.bytes());
        }
      }
    } else if (info.kind == ir::TensorKind::Variable || info.kind == ir::TensorKind::RemoteVariable) {
      const replication::VariableLayout layout = replication::variable_layout(info);
      const size_t esize = ir::dtype_size(info.dtype);
      const int64_t row_numel = ir::numel(layout.row_shape);
      for (int64_t r = hosted_.first; r < hosted_.first + hosted_.count; ++r) {
        const auto row = static_cast<size_t>(layout.initial_row[static_cast<size_t>(r)]);
        replication::extract_shard(info.data.data() + row * static_cast<size_t>(row_numel) * esize, variable_buffer(id, r),
                                   row_numel, layout.shard_over, layout.shard_index[static_cast<size_t>(r)], esize);
      }
    }
  }
  for (auto& state : states_) state->clear_live();
  refresh_host_weights();
}

void Session::refresh_host_weights(ir::TensorId tensor) {
  if (!host_update_) return;
  if (tensor != ir::kNoTensor) {
    host_update_->refresh(tensor);
    return;
  }
  for (size_t t = 0; t < graph_.num_tensors(); ++t) host_update_->refresh(static_cast<ir::TensorId>(t));
}

ir::Shape Session::host_shape(ir::StreamId stream) const {
  const ir::Stream& s = graph_.stream(stream);
  const ir::Shape& shape = graph_.tensor(s.tensor).shape;
  if (s.direction == ir::StreamDirection::DeviceToHost) return output_layout(stream).host_shape(shape);
  return with_leading_dims({options_.device_iterations * options_.gradient_accumulation, hosted_.count}, shape);
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
    const ir::TensorInfo& t = graph_.tensor(s.tensor);
    if (a.dtype != t.dtype) {
      ir::fail(ErrorCode::DTypeMismatch, what() + ": host array is " + std::string(ir::dtype_name(a.dtype)) +
                                             ", expected " + std::string(ir::dtype_name(t.dtype)));
    }
    const ir::Shape expected = host_shape(a.stream);
    if (a.shape != expected) {
      ir::fail(ErrorCode::ShapeMismatch,
               what() + ": host array has shape " + ir::shape_string(a.shape) + ", expected " +
                   ir::shape_string(expected) + " (device_iterations=" + std::to_string(options_.device_iterations) +
                   ", gradient_accumulation=" + std::to_string(options_.gradient_accumulation) +
                   (options_.num_workers > 1 ? ", replicas hosted by this worker=" : ", replication_factor=") +
                   std::to_string(hosted_.count) + ", stream shape " +
                   ir::shape_string(t.shape) + "; leading dims of 1 left out)");
    }
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

void Session::abort_all(const std::string& reason) {
  for (auto& c : collectives_) c->abort(reason);
  if (host_update_) host_update_->abort(reason);
  streams_->abort();
  for (auto& per_replica : channels_) {
    for (auto& channel : per_replica) channel->abort();
  }
}

void Session::run_step(DeviceState& st, const Step& step, int64_t iteration) {
  const bool update = step.kind == StepKind::Update;
  st.iteration = iteration;
  st.micro_batch = update ? 0 : step.micro_batch;
  const StagePlan& sp = program_.stages[static_cast<size_t>(step.stage)];
  const int64_t slot = update ? 0 : step.micro_batch % sp.slots;
  const auto ring = static_cast<int64_t>(update ? 1 : stage_ring_[static_cast<size_t>(step.stage)]);
  const auto list = static_cast<size_t>(slot * ring + (iteration * program_.micro_batches + step.micro_batch) % ring);
  const StepItems& si = st.items[static_cast<size_t>(step.stage)][static_cast<size_t>(step.kind)][list];
  if (!options_.profile) {
    for (const Item& item : si.items) {
      if (item.scratch) st.use_scratch(item.scratch);
      item.fn();
      st.set_live(si.live_index, item.live_bytes);
    }
  } else {
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
    st.spans.push_back({step_span(step.kind), stage, update ? -1 : micro_batch, iter, -1, begin < 0 ? end : begin, end});
  }
  if (update || step.kind == StepKind::Backward || !program_.training) st.set_live(si.live_index, 0);
}

// One device's part of a run, on its thread. A failure aborts the collectives and the
// channels first, so that no other device waits for this one.
void Session::run_device(DeviceState& st) {
  try {
    for (int64_t i = 0; i < iterations_; ++i) {
      for (const Step& step : st.steps) run_step(st, step, i);
    }
  } catch (const ir::Error& e) {
    st.clear_live();
    const std::string who = num_devices() == 1 ? std::string()
                            : devices_per_replica() == 1
                                ? "replica " + std::to_string(st.global_replica)
                                : "replica " + std::to_string(st.global_replica) + " device " + std::to_string(st.index);
    if (e.code() != ErrorCode::Cancelled) abort_all(who + " failed: " + e.what());
    if (!who.empty()) ir::fail(e.code(), who + ": " + e.what());
    throw;
  }
  st.clear_live();
}

void Session::run(std::span<const HostArray> inputs, std::span<const HostArray> outputs) {
  RunRequest request;
  request.inputs.assign(inputs.begin(), inputs.end());
  request.outputs.assign(outputs.begin(), outputs.end());
  run(std::move(request));
}

void Session::run(RunRequest request) {
  check_request(request);
  auto handle = std::make_shared<RunHandle>();
  Job job{std::move(request), handle, 0};
  {
    std::lock_guard lock(mutex_);
    if (!jobs_.empty() || running_) {  // behind other runs: queue it, in order
      job.generation = cancel_generation_;
      jobs_.push_back(std::move(job));
      jobs_changed_.notify_all();
      job.handle = nullptr;
    } else {  // idle: run on this thread, sparing two thread hand-overs
      running_ = true;
      job.generation = cancel_generation_;
    }
  }
  if (job.handle) execute(job, true);
  handle->wait();
}

std::shared_ptr<RunHandle> Session::run_async(RunRequest request) {
  check_request(request);
  auto handle = std::make_shared<RunHandle>();
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(Job{std::move(request), handle, cancel_generation_});
  }
  jobs_changed_.notify_all();
  return handle;
}

void Session::cancel() {
  std::lock_guard lock(mutex_);
  ++cancel_generation_;
  if (running_) abort_all("the run was cancelled");
}

void Session::controller_loop() {
  for (;;) {
    Job job;
    bool run_it = false;
    {
      std::unique_lock lock(mutex_);
      jobs_changed_.wait(lock, [&] { return stopping_ || (!jobs_.empty() && !running_); });
      if (jobs_.empty()) return;  // stopping, nothing left
      job = std::move(jobs_.front());
      jobs_.pop_front();
      running_ = true;
      run_it = job.generation == cancel_generation_;
    }
    execute(job, run_it);
  }
}

namespace {

ir::Error cancelled() { return ir::Error(ErrorCode::Cancelled, "the run was cancelled (plx_session_cancel or session destroyed)"); }

void notify(const RunRequest& request, const std::shared_ptr<RunHandle>& handle, std::exception_ptr error) {
  if (request.on_complete) {
    try {
      request.on_complete(error);
    } catch (...) {  // a completion callback's failure cannot change the run's outcome
    }
  }
  handle->complete(error);
}

}  // namespace

void Session::execute(Job& job, bool run_it) {
  if (!run_it) {
    finish(job, std::make_exception_ptr(cancelled()));
    return;
  }
  std::unique_lock variables(variables_mutex_);
  for (auto& per_replica : channels_) {
    for (auto& channel : per_replica) channel->reset();
  }
  for (auto& state : states_) state->spans.clear();
  if (options_.output_mode == OutputMode::Sum) {
    for (const HostArray& a : job.request.outputs) {
      std::memset(a.data, 0, static_cast<size_t>(ir::numel(a.shape)) * ir::dtype_size(a.dtype));
    }
  }
  if (host_update_) {
    try {
      host_update_->begin_run(iterations_, [this](const std::string& reason) { abort_all(reason); });
    } catch (...) {  // the initial broadcast of the weights failed: nothing ran
      variables.unlock();
      finish(job, std::current_exception());
      return;
    }
  }
  streams_->bind(job.request, stream_items_, stream_accumulates_);
  std::mutex error_mutex;
  std::exception_ptr stream_error;
  streams_->start([&](std::exception_ptr e) {
    {
      std::lock_guard lock(error_mutex);
      stream_error = e;
    }
    abort_all("a stream failed");
  });
  std::vector<std::function<void()>> work;
  work.reserve(states_.size());
  const int64_t start = trace_now();
  for (auto& state : states_) {
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
  if (host_update_) errors.push_back(host_update_->end_run());
  std::exception_ptr error = primary_error(errors);
  streams_->finish(error != nullptr);
  const int64_t end = trace_now();
  variables.unlock();
  {
    std::lock_guard lock(mutex_);
    stream_stats_ = streams_->stats();
    stream_stats_.run_ns = end - start;
    if (options_.profile) {
      trace_ = RunTrace{start, end, devices_per_replica(), {}, program_.placement.stage_names, {}};
      for (const auto& op : graph_.ops()) trace_.op_names.push_back(op.name);
      for (auto& state : states_) trace_.devices.push_back(std::move(state->spans));
    }
    if (job.generation != cancel_generation_) {
      error = std::make_exception_ptr(cancelled());
    } else if (stream_error) {
      error = stream_error;
    }
  }
  if (error) {
    for (auto& c : collectives_) c->reset();
  } else {
    steps_ += options_.device_iterations;
  }
  finish(job, error);
}

void Session::finish(Job& job, std::exception_ptr error) {
  {
    std::lock_guard lock(mutex_);
    running_ = false;
  }
  jobs_changed_.notify_all();
  notify(job.request, job.handle, error);
}

StreamStats Session::last_stream_stats() const {
  std::lock_guard lock(mutex_);
  return stream_stats_;
}

RunTrace Session::last_trace() const {
  std::lock_guard lock(mutex_);
  return trace_;
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
  check_group_bytes(t, replication::variable_layout(t), bytes);
}

void Session::check_group_bytes(const ir::TensorInfo& t, const replication::VariableLayout& layout, size_t bytes) const {
  const ir::Shape shape = layout.host_shape;
  const size_t expected = static_cast<size_t>(ir::numel(shape)) * ir::dtype_size(t.dtype);
  if (bytes != expected) {
    ir::fail(ErrorCode::InvalidArgument, "variable '" + t.name + "': host buffer is " + std::to_string(bytes) +
                                             " bytes, expected " + std::to_string(expected) + " for " +
                                             std::string(ir::dtype_name(t.dtype)) + ir::shape_string(shape) +
                                             (replication_factor() > 1 ? " (its retrieval mode's shape)" : ""));
  }
}

void Session::read_variable(ir::TensorId tensor, std::span<std::byte> out) const {
  std::lock_guard lock(variables_mutex_);
  const ir::TensorInfo& t = variable(tensor);
  check_variable_bytes(t, out.size());
  transfer_variable(t, tensor, out.data(), true);
}

void Session::write_variable(ir::TensorId tensor, std::span<const std::byte> data) {
  std::lock_guard lock(variables_mutex_);
  const ir::TensorInfo& t = variable(tensor);
  check_variable_bytes(t, data.size());
  transfer_variable(t, tensor, const_cast<std::byte*>(data.data()), false);
  refresh_host_weights(tensor);
}

VariableStorage Session::variable_storage(ir::TensorId tensor) const {
  const ir::TensorInfo& t = variable(tensor);
  VariableStorage s;
  const bool host = t.kind == ir::TensorKind::RemoteVariable || program_.offloaded.count(tensor);
  (host ? s.remote_bytes : s.device_bytes) = t.bytes();
  s.shard_over = t.sharding ? t.sharding->shard_over : 1;
  return s;
}

DeviceMemoryStats Session::memory_stats(size_t device) const {
  if (device >= devices_.size()) {
    ir::fail(ErrorCode::NotFound, "device " + std::to_string(device) + " does not exist (the session has " +
                                      std::to_string(devices_.size()) + ")");
  }
  const auto per_replica = static_cast<size_t>(devices_per_replica());
  const size_t index = device % per_replica;
  const DevicePlan& plan = program_.devices[index];
  const memory::Arena& arena = devices_[device]->arena();
  size_t offloaded = 0;
  for (const auto& [root, offset] : program_.offloaded) {
    if (program_.stages[static_cast<size_t>(program_.home_stage.at(root))].device == static_cast<int64_t>(index)) {
      offloaded += graph_.tensor(root).bytes();
    }
  }
  return DeviceMemoryStats{arena.capacity(),
                           plan.persistent_bytes,
                           arena.live_bytes(),
                           arena.peak_bytes(),
                           plan.planned_peak_bytes,
                           index == 0 ? remote_[device / per_replica]->bytes() : 0,
                           offloaded};
}

}  // namespace plexus::runtime
