// The device program of a session (docs/design.md "Runtime", "Pipelining"): the schedule's
// steps (strategy_plugin.h) lowered, per device of every hosted replica, to lists of
// executable items (stream loads and stores, stage-to-stage channel transfers, gradient
// accumulation, offloaded-state copies, kernels) whose addresses are resolved once, at
// construction, from the compiled Program; and running them: one run executes every
// device's steps for the run's iterations on the device threads.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "core/compile/program.h"
#include "core/compile/schedule.h"
#include "core/ir/graph.h"
#include "core/ops/kernel_context.h"
#include "core/plugin_host/collectives.h"
#include "core/runtime/host_update.h"
#include "core/runtime/replica_storage.h"
#include "core/runtime/stream_binding.h"
#include "core/runtime/trace.h"
#include "core/streams/bounded_queue.h"

namespace plexus::runtime {

/// What the items point into: owned by the session, alive as long as the program.
struct DeviceResources {
  const ir::Graph& graph;
  const compile::Program& program;
  ReplicaStorage& storage;
  StreamBinding& streams;
  std::vector<std::unique_ptr<plugin_host::Collectives>>& collectives;  ///< per device index; empty when none is needed
  HostUpdate* host_update;  ///< null unless the weight update runs on the host
  HostedReplicas hosted;
  int threads_per_device = 1;  ///< threads of a kernel (a GEMM's panels, core/ops/matmul/gemm_parts.h)
  bool profile = false;        ///< record spans (trace.h)
  bool spin = false;           ///< channels spin before sleeping (VirtualDevice)
};

/// The error a failed run reports, of one error per device (null: it succeeded): the first
/// that is not a consequence of another device's failure (Cancelled), else the first;
/// null when every device succeeded.
std::exception_ptr primary_error(const std::vector<std::exception_ptr>& errors);

/// Thread-safety: run(), take_spans() from one controlling thread; abort_all() from any
/// thread (it wakes the device threads from whatever they wait on).
class DeviceProgram {
 public:
  /// Builds the channels between stages (per hosted replica and Program::ChannelPlan) and
  /// every device's item lists for `schedule` (per device index, the steps it runs),
  /// creating the kernels. A run repeats the schedule `iterations` times.
  DeviceProgram(const DeviceResources& resources, const compile::Schedule& schedule, int64_t iterations);
  ~DeviceProgram();
  DeviceProgram(const DeviceProgram&) = delete;
  DeviceProgram& operator=(const DeviceProgram&) = delete;

  /// Runs every device's steps for the iterations on its thread and waits for all; returns
  /// each device's error (null: none), in device order. A device that fails first aborts
  /// the others (abort_all), and its error names it ("replica r device d").
  /// `first_micro_batch`: micro-batches run before this run (KernelContext::micro_batch_counter).
  std::vector<std::exception_ptr> run(int64_t first_micro_batch = 0);
  /// Wakes every device waiting on a channel, a stream, a collective or the host update
  /// with an error; the run then fails.
  void abort_all(const std::string& reason);
  /// Whether abort_all() was called during the run in progress (reset by run()).
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  /// The last run's spans per device (empty lists unless resources.profile), moved out.
  std::vector<std::vector<Span>> take_spans();
  /// Decisions the kernels made while being created (GEMM kernel sets, ...), one line each.
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  struct Item;
  struct StepItems;
  struct DeviceState;

  /// The step an item belongs to: stage, phase, micro-batch slot, and ring buffer index of
  /// the streams the stage reads in place.
  struct StepPlace {
    int32_t stage;
    ir::Phase phase;
    int64_t slot;
    size_t ring_index;
  };

  void build_device(DeviceState& state);
  void build_step(DeviceState& state, const StepPlace& place, std::vector<Item>& items);
  /// Update step with gradient accumulation: the accumulated sums -> their means, once.
  void add_mean_scaling(const DeviceState& st, int32_t stage, std::vector<Item>& items) const;
  Item action_item(DeviceState& st, const StepPlace& place, const compile::Action& a);
  Item load_stream(DeviceState& st, const StepPlace& place, int32_t stream) const;
  Item store_stream(DeviceState& st, const StepPlace& place, int32_t stream) const;
  Item channel_transfer(const DeviceState& st, const StepPlace& place, const compile::Action& a) const;
  Item accumulate(DeviceState& st, const StepPlace& place, ir::TensorId tensor) const;
  Item offloaded_copy(const DeviceState& st, const StepPlace& place, const compile::Action& a) const;
  Item run_op(DeviceState& st, const StepPlace& place, ir::OpId op);
  /// The item running op `id`'s kernel in `ctx` (no scratch when the op needs none).
  Item kernel_item(ir::OpId id, ops::KernelContext ctx) const;
  /// The context of `op`'s kernel run for st at `place`: the device's scratch, its inputs
  /// and outputs.
  ops::KernelContext kernel_context(DeviceState& st, const StepPlace& place, const ir::Op& op);
  /// The item that hands replica st's gradient of host-updated op `op` to the host.
  Item post_gradient(const DeviceState& st, const StepPlace& place, ir::OpId op) const;
  std::byte* slot_region(const DeviceState& state, int32_t stage, int64_t slot) const;
  std::byte* slot_address(const DeviceState& state, int32_t stage, int64_t slot, ir::TensorId root) const;
  /// Where `tensor` is for a step at `place`; a stream the stage reads in place is in its
  /// ring buffer place.ring_index.
  std::byte* tensor_address(const DeviceState& state, const StepPlace& place, ir::TensorId tensor) const;
  void run_device(DeviceState& state);
  void run_step(DeviceState& state, const compile::Step& step, int64_t iteration);
  /// run_step's items when profiling: each traced item and the step become spans.
  void run_items_traced(DeviceState& st, const StepItems& si, const compile::Step& step, int64_t iteration) const;

  DeviceResources r_;
  int64_t iterations_;
  int64_t first_micro_batch_ = 0;  ///< of the run in progress
  std::vector<std::vector<std::unique_ptr<streams::BoundedQueue>>> channels_;  ///< [hosted replica][ChannelPlan]
  std::vector<size_t> stage_ring_;  ///< per stage: ring buffers of the streams it reads in place (1: none)
  std::vector<std::unique_ptr<DeviceState>> states_;
  std::vector<std::string> notes_;
  std::atomic<bool> aborted_{false};  ///< abort_all() was called in the run in progress
};

}  // namespace plexus::runtime
