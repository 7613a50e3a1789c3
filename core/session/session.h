// A session: an IR compiled for R replicas of D virtual devices each, with its variables
// resident on the devices between runs (PopXL's Session, PopTorch's compiled model).
//
// A run executes `device_iterations` iterations. Training: each iteration processes
// `gradient_accumulation` micro-batches (forward and backward), then one weight update
// with the gradients summed and scaled once to their mean (seed 003). Inference: the
// device_iterations x gradient_accumulation micro-batches flow through the stages as
// pipelines of at most 4096 micro-batches, repeated (so that creating a session takes the
// same time and memory at any device_iterations). Every device of a replica runs its list of steps from the execution strategy
// (strategy_plugin.h; the trivial schedule for one device); activations and gradients
// cross stages through bounded channels; replicas meet in collectives through the
// collectives plugin (one communicator per device index).
//
// The session is a facade: compiling (core/compile) happens in its constructor; the
// tensors live in ReplicaStorage; DeviceProgram holds and runs every device's steps;
// RunQueue orders runs and cancels them; VariableAccess reads and writes variables.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/compile/placement.h"
#include "core/compile/program.h"
#include "core/compile/schedule.h"
#include "core/ir/graph.h"
#include "core/plugin_host/collectives.h"
#include "core/runtime/replica_storage.h"
#include "core/runtime/run_handle.h"
#include "core/runtime/stream_binding.h"
#include "core/runtime/trace.h"
#include "core/session/session_options.h"
#include "core/session/variable_access.h"

namespace plexus::runtime {
class DeviceProgram;
class HostUpdate;
class RunQueue;
}  // namespace plexus::runtime

namespace plexus::session {

/// Thread-safety: all methods may be called from any thread. Runs execute one at a time,
/// in the order they were started, on the session's controller thread.
class Session {
 public:
  /// Copies `graph`, places its ops on stages and devices, asks the execution strategy for
  /// a schedule and checks it, compiles every stage, allocates R x D devices, loads the
  /// variables and, for R > 1 and a graph with collective ops, the collectives plugin.
  /// Throws InvalidArgument (options, placement, fewer micro-batches than the strategy
  /// needs), OutOfDeviceMemory (naming the device and bytes), Unsupported (a bad
  /// BLIS_ARCH_TYPE), Plugin (a plugin missing or broken, a schedule breaking a rule).
  Session(const ir::Graph& graph, const SessionOptions& options);
  /// Cancels running and queued runs, waits for them, and stops the threads.
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// Runs device_iterations iterations on every replica. Every host-to-device stream needs
  /// exactly one input array of shape host_shape(stream); device-to-host arrays are
  /// optional. When a device fails, the others are woken from their channels and
  /// collectives, the run throws the failing device's error (naming it), and the session
  /// stays usable.
  void run(std::span<const runtime::HostArray> inputs, std::span<const runtime::HostArray> outputs);

  /// Runs `request` (see run_async) and waits for it; on an idle session it runs on the
  /// calling thread. Throws the run's error.
  void run(runtime::RunRequest request);
  /// Checks `request` (arrays as run(); a callback per stream at most, the right kind for
  /// the stream's direction, a stream fed by an array or a callback, not both), then
  /// queues it and returns at once. request.on_complete is called once when it ends, on
  /// the controller thread, before the handle completes. Throws what run() throws for a
  /// bad request (nothing is queued then).
  std::shared_ptr<runtime::RunHandle> run_async(runtime::RunRequest request);
  /// Ends the running and queued runs with ir::Error(Cancelled); the session stays usable.
  void cancel();
  /// Streaming figures of the last finished run.
  runtime::StreamStats last_stream_stats() const;

  /// Shape of the host array for `stream` (streams/host_array_layout.h): inputs
  /// [device_iterations * gradient_accumulation, R] + S; outputs per the output mode;
  /// leading dims of 1 left out (seed 000, "Data input shape"; docs/design.md "Semantics").
  /// With several workers R is the replicas this worker hosts.
  ir::Shape host_shape(ir::StreamId stream) const;
  /// Shape of the host data of variable `tensor` (device, remote or replica-sharded) when
  /// read or written: see replication/variable_layout.h (retrieval modes, full tensors for
  /// sharded variables). With several workers the shape is the same (global replicas):
  /// a worker writes only its hosted replicas' rows, and reads every row, from a hosted
  /// replica of it when every worker hosts one of each row, else collectively (below).
  ir::Shape variable_shape(ir::TensorId tensor) const;
  void read_variable(ir::TensorId tensor, std::span<std::byte> out) const;
  void write_variable(ir::TensorId tensor, std::span<const std::byte> data);
  VariableStorage variable_storage(ir::TensorId tensor) const;
  /// With several workers, reading a variable whose rows some worker holds no replica of
  /// (grouped variables, retrieval mode all_replicas) is a collective: every worker must
  /// read it, in the same order; it all-gathers the replicas over host-buffer collectives.
  /// Layout-independent access for checkpoints (docs/design.md "Checkpoints"): one full,
  /// unpadded row per replica group of `tensor`'s grouping ([num_groups] + full shape,
  /// whatever its retrieval mode or sharding), from each group's lowest replicas; writing
  /// gives every replica its group's row (its shard of it when replica-sharded).
  int64_t variable_groups(ir::TensorId tensor) const;
  void read_variable_groups(ir::TensorId tensor, std::span<std::byte> out) const;
  void write_variable_groups(ir::TensorId tensor, std::span<const std::byte> data);
  /// Slot `entry` of remote buffer `buffer` on every hosted replica: [hosted replicas] +
  /// the slot shape ([R] + slot shape with one worker).
  void read_remote_slot(ir::RemoteBufferId buffer, int64_t entry, std::span<std::byte> out) const;
  void write_remote_slot(ir::RemoteBufferId buffer, int64_t entry, std::span<const std::byte> data);
  /// Steps (device iterations: weight updates when training) the session has completed,
  /// device_iterations per successful run; restored from a checkpoint.
  int64_t steps() const { return steps_.load(); }
  /// Keeps runs from executing while the lock is held (a run in progress finishes first);
  /// variable and slot accesses on this thread meanwhile see and leave one consistent
  /// state (a checkpoint's snapshot or restore). Runs started meanwhile wait.
  std::unique_lock<std::recursive_mutex> hold_runs() const;
  void set_steps(int64_t steps) { steps_ = steps; }

  /// Hosted replicas x D; device index = (replica - first hosted) * devices_per_replica() +
  /// device within the replica.
  size_t num_devices() const;
  int64_t devices_per_replica() const { return program_.placement.num_devices; }
  int64_t num_stages() const { return program_.placement.num_stages; }
  /// Micro-batches per iteration of the schedule (gradient accumulation when training).
  int64_t micro_batches() const { return program_.micro_batches; }
  bool training() const { return program_.training; }
  int64_t replication_factor() const { return graph_.replication_factor(); }
  /// The global replicas this worker hosts (all R with one worker).
  const runtime::HostedReplicas& hosted_replicas() const { return hosted_; }
  /// The collectives plugin in use; null when the session needs none.
  const plugin_host::Collectives* collectives() const { return collectives_.empty() ? nullptr : collectives_.front().get(); }
  const std::string& strategy_name() const { return strategy_name_; }
  const compile::Schedule& schedule() const { return schedule_; }
  runtime::DeviceMemoryStats memory_stats(size_t device) const;
  const SessionOptions& options() const { return options_; }
  const ir::Graph& graph() const { return graph_; }
  const compile::Placement& placement() const { return program_.placement; }
  /// What the compile passes made of the graph for one replica (program.h).
  const compile::Program& program() const { return program_; }
  /// Decisions made while compiling (GEMM kernel sets, ...), one line each.
  const std::vector<std::string>& notes() const;
  /// What the session warned about when it was created (core_budget.h: compute threads
  /// outnumbering the cores), one line each; empty when nothing.
  const std::vector<std::string>& warnings() const;
  /// The last run's trace; empty (no devices) unless options().profile.
  runtime::RunTrace last_trace() const;

 private:
  /// Runs the compile passes (core/compile/passes.h) on graph_ and keeps what they made.
  void compile_program();
  /// Refuses options whose host arrays cannot exist: more bytes than int64 counts or than
  /// the host's physical memory (ir::Error InvalidArgument naming the stream).
  void check_host_arrays() const;
  /// The device collectives (R > 1 and a graph with collective ops) and the host update.
  void open_plugins();
  /// The stream binding and every stream's host array layout.
  void bind_streams(bool spin, bool io_spin);
  /// host_collectives_, opened first if needed (a collective step of every worker).
  plugin_host::Collectives& host_collectives() const;
  /// A communicator over the session's replicas through its collectives plugin, given the
  /// environment's cluster definition (runtime/workers.h); host_buffers as Collectives'.
  std::unique_ptr<plugin_host::Collectives> make_collectives(bool host_buffers) const;
  void check_request(const runtime::RunRequest& request) const;
  void check_arrays(std::span<const runtime::HostArray> arrays, ir::StreamDirection direction, bool required,
                    std::vector<bool>& seen) const;
  /// The host array layout of `stream` under the session's options.
  streams::HostArrayLayout stream_layout(ir::StreamId stream) const;
  /// One run (RunQueue::Execute): streams bound, devices run, outcome settled.
  std::exception_ptr execute(const runtime::RunRequest& request, const std::function<bool()>& cancelled);
  /// Before the devices start: sum outputs zeroed, the host update's run begun.
  void prepare_run(const runtime::RunRequest& request);
  /// The last run's stream figures and trace, from `start` to `end` (trace_now()).
  void record_run(int64_t start, int64_t end);

  ir::Graph graph_;
  SessionOptions options_;
  std::vector<std::string> warnings_;
  runtime::HostedReplicas hosted_;
  compile::Program program_;
  compile::Schedule schedule_;
  std::string strategy_name_;
  int64_t iterations_ = 1;  ///< schedule iterations per run
  std::vector<std::unique_ptr<plugin_host::Collectives>> collectives_;  ///< per device index; empty when none is needed
  /// Host-buffer collectives over the R replicas, made when first needed (the host update,
  /// at construction; a read needing every worker); used by the host update during runs
  /// and by variable reads between them (under the variables lock).
  mutable std::unique_ptr<plugin_host::Collectives> host_collectives_;
  std::unique_ptr<runtime::HostUpdate> host_update_;  ///< weight_update_on_host of a training graph
  std::unique_ptr<runtime::ReplicaStorage> storage_;
  std::unique_ptr<runtime::StreamBinding> streams_;
  std::vector<streams::HostArrayLayout> layouts_;  ///< per stream
  std::unique_ptr<runtime::DeviceProgram> devices_;
  std::unique_ptr<VariableAccess> variables_;
  mutable std::mutex stats_mutex_;  ///< guards trace_ and stream_stats_
  runtime::RunTrace trace_;
  runtime::StreamStats stream_stats_;
  std::atomic<int64_t> steps_{0};
  std::unique_ptr<runtime::RunQueue> queue_;  ///< last: stopped first
};

}  // namespace plexus::session
