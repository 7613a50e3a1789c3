// A session: an IR compiled for R replicas of D virtual devices each, with its variables
// resident on the devices between runs (PopXL's Session, PopTorch's compiled model).
//
// A run executes `device_iterations` iterations. Training: each iteration processes
// `gradient_accumulation` micro-batches (forward and backward), then one weight update
// with the gradients summed and scaled once to their mean (seed 003). Inference: the
// device_iterations x gradient_accumulation micro-batches flow through the stages as one
// pipeline. Every device of a replica runs its list of steps from the execution strategy
// (strategy_plugin.h; the trivial schedule for one device); activations and gradients
// cross stages through bounded channels; replicas meet in collectives through the
// collectives plugin (one communicator per device index).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <span>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/memory/remote_memory.h"
#include "core/replication/variable_layout.h"
#include "core/streams/bounded_queue.h"
#include "core/plugin_host/collectives.h"
#include "core/runtime/host_update.h"
#include "core/runtime/output_mode.h"
#include "core/compile/placement.h"
#include "core/compile/program.h"
#include "core/runtime/run_handle.h"
#include "core/compile/schedule.h"
#include "core/runtime/stream_binding.h"
#include "core/runtime/trace.h"
#include "core/runtime/virtual_device.h"

namespace plexus::runtime {

struct SessionOptions {
  int64_t device_iterations = 1;      ///< iterations per run, >= 1
  int64_t gradient_accumulation = 1;  ///< micro-batches per weight update, >= 1
  size_t device_memory_bytes = 0;     ///< arena capacity per device; 0 = no limit
  int threads_per_device = 0;         ///< BLIS threads a device may use; 0 = cores / devices
  std::string collectives_plugin;     ///< "" = $PLEXUS_COLLECTIVES, else "local"; loaded when needed
  int64_t collective_timeout_ms = 60000;  ///< how long a collective waits for a missing replica
  /// Stages of blocks and their devices; empty: auto-staging from the blocks' devices, or
  /// one stage when the IR has no blocks (placement.h).
  std::vector<StageSpec> stages;
  /// Strategy plugin name ("pipelined", "sharded", ...); "" = the trivial schedule for one
  /// device per replica, "pipelined" for more.
  std::string execution_strategy;
  std::string strategy_options;  ///< passed to the plugin, e.g. "fill_drain"
  OutputMode output_mode = OutputMode::All;
  int64_t output_return_period = 1;  ///< N of OutputMode::EveryN; must divide device_iterations
  bool offload_optimizer_state = false;  ///< optimizer state in host memory (seed 003)
  /// The weight update on the host (seed 002, host_call with variables_on_host;
  /// host_update.h): the gradients of every weight-update op (adamw_, scaled_add_) go to
  /// host memory as the backward pass finishes them, are mean-reduced over all R replicas
  /// there, and the op runs on the host, its optimizer state only in host memory; the new
  /// weights are copied to the devices before the next forward pass. The graph should
  /// then not all-reduce the gradients itself.
  bool weight_update_on_host = false;
  bool profile = false;                  ///< record a RunTrace of every run
  /// Device-side buffers per stream and replica filled ahead of compute by the io threads
  /// (DESIGN.md "Streaming layer"); 0: devices copy from the host themselves.
  int64_t prefetch_depth = 2;
  int io_threads = 1;  ///< threads of the session's io_context, >= 1
  /// Workers (seed 002; DESIGN.md "Workers"): the graph's R replicas are split over
  /// num_workers processes, each running a session with the same graph and options but its
  /// own worker_index; worker w hosts global replicas [w R/W, (w+1) R/W). R must be a
  /// multiple of num_workers, and the collectives plugin must serve several processes
  /// ("mpi"). Streams carry the hosted replicas only. num_workers = 0 takes both from the
  /// launcher's environment (workers.h; one worker without a launcher).
  int64_t num_workers = 1;
  int64_t worker_index = 0;
};

/// The global replicas one session (worker) hosts: [first, first + count).
struct HostedReplicas {
  int64_t first = 0;
  int64_t count = 1;
  bool hosts(int64_t replica) const { return replica >= first && replica < first + count; }
};

/// Memory of one device, in bytes.
struct DeviceMemoryStats {
  size_t arena_bytes = 0;     ///< size of the device arena (the plan's need)
  size_t variable_bytes = 0;  ///< variables, constants and gradient accumulators (always resident)
  size_t current_bytes = 0;   ///< exact bytes live now
  size_t peak_bytes = 0;      ///< most bytes live at once so far
  size_t planned_peak_bytes = 0;  ///< most bytes live at once, from the plan
  size_t remote_buffer_bytes = 0;  ///< this replica's remote buffers (host memory, not the arena)
  size_t offloaded_bytes = 0;      ///< optimizer state of this device's stages kept in host memory
};

/// Where one replica keeps a variable, in bytes per replica.
struct VariableStorage {
  size_t device_bytes = 0;  ///< in the device arena (a replica-sharded variable: its shard)
  size_t remote_bytes = 0;  ///< in a remote buffer slot, or offloaded to host memory
  int64_t shard_over = 1;   ///< replicas sharing the value in shards (1: not sharded)
};

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

  /// Runs device_iterations iterations on every replica. Every host-to-device stream needs
  /// exactly one input array of shape host_shape(stream); device-to-host arrays are
  /// optional. When a device fails, the others are woken from their channels and
  /// collectives, the run throws the failing device's error (naming it), and the session
  /// stays usable.
  void run(std::span<const HostArray> inputs, std::span<const HostArray> outputs);

  /// Runs `request` (see run_async) and waits for it; on an idle session it runs on the
  /// calling thread. Throws the run's error.
  void run(RunRequest request);
  /// Checks `request` (arrays as run(); a callback per stream at most, the right kind for
  /// the stream's direction, a stream fed by an array or a callback, not both), then
  /// queues it and returns at once. request.on_complete is called once when it ends, on
  /// the controller thread, before the handle completes. Throws what run() throws for a
  /// bad request (nothing is queued then).
  std::shared_ptr<RunHandle> run_async(RunRequest request);
  /// Ends the running and queued runs with ir::Error(Cancelled); the session stays usable.
  void cancel();
  /// Streaming figures of the last finished run.
  StreamStats last_stream_stats() const;

  /// Shape of the host array for `stream`: inputs [device_iterations *
  /// gradient_accumulation, R] + S; outputs per the output mode (output_mode.h); leading
  /// dims of 1 left out (seed 000, "Data input shape"; DESIGN.md "Semantics"). With
  /// several workers R is the replicas this worker hosts.
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
  /// Layout-independent access for checkpoints (DESIGN.md "Checkpoints"): one full,
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
  std::unique_lock<std::recursive_mutex> hold_runs() const { return std::unique_lock(variables_mutex_); }
  void set_steps(int64_t steps) { steps_ = steps; }

  /// Hosted replicas x D; device index = (replica - first hosted) * devices_per_replica() +
  /// device within the replica.
  size_t num_devices() const { return devices_.size(); }
  int64_t devices_per_replica() const { return program_.placement.num_devices; }
  int64_t num_stages() const { return program_.placement.num_stages; }
  /// Micro-batches per iteration of the schedule (gradient accumulation when training).
  int64_t micro_batches() const { return program_.micro_batches; }
  bool training() const { return program_.training; }
  int64_t replication_factor() const { return graph_.replication_factor(); }
  /// The global replicas this worker hosts (all R with one worker).
  const HostedReplicas& hosted_replicas() const { return hosted_; }
  /// The collectives plugin in use; null when the session needs none.
  const Collectives* collectives() const { return collectives_.empty() ? nullptr : collectives_.front().get(); }
  const std::string& strategy_name() const { return strategy_name_; }
  const Schedule& schedule() const { return schedule_; }
  DeviceMemoryStats memory_stats(size_t device) const;
  const SessionOptions& options() const { return options_; }
  const ir::Graph& graph() const { return graph_; }
  const Placement& placement() const { return program_.placement; }
  /// Decisions made while compiling (GEMM kernel sets, ...), one line each.
  const std::vector<std::string>& notes() const { return notes_; }
  /// The last run's trace; empty (no devices) unless options().profile.
  RunTrace last_trace() const;

 private:
  struct Item;
  struct DeviceState;
  struct StepItems;

  const ir::TensorInfo& variable(ir::TensorId tensor) const;
  void make_schedule();
  void check_memory() const;
  void build_device(DeviceState& state);
  void build_step(DeviceState& state, int32_t stage, ir::Phase phase, int64_t slot, size_t ring_index, std::vector<Item>& items);
  std::byte* slot_region(const DeviceState& state, int32_t stage, int64_t slot) const;
  std::byte* slot_address(const DeviceState& state, int32_t stage, int64_t slot, ir::TensorId root) const;
  /// Where `tensor` is for a step of `stage` in micro-batch slot `slot`; a stream the stage
  /// reads in place is in its ring buffer `ring_index`.
  std::byte* tensor_address(const DeviceState& state, int32_t stage, ir::Phase phase, int64_t slot, size_t ring_index,
                            ir::TensorId tensor) const;
  void check_request(const RunRequest& request) const;
  void check_arrays(std::span<const HostArray> arrays, ir::StreamDirection direction, bool required,
                    std::vector<bool>& seen) const;
  OutputLayout output_layout(ir::StreamId stream) const;
  void load_variables();
  /// The host update's copy of host-updated weight `tensor` (every one for kNoTensor) <- the
  /// devices', after the session wrote variables.
  void refresh_host_weights(ir::TensorId tensor = ir::kNoTensor);
  /// The item that hands replica st's gradient of host-updated op `op` to the host.
  Item post_gradient(const DeviceState& st, ir::OpId op, const std::byte* gradient) const;
  struct Job {
    RunRequest request;
    std::shared_ptr<RunHandle> handle;
    uint64_t generation;
  };
  void controller_loop();
  void execute(Job& job, bool run_it);
  /// Marks the session idle and completes `job` with `error` (null: success).
  void finish(Job& job, std::exception_ptr error);
  void run_device(DeviceState& state);
  void run_step(DeviceState& state, const Step& step, int64_t iteration);
  void abort_all(const std::string& reason);
  /// Storage of `tensor` on hosted (global) replica `replica`.
  std::byte* variable_buffer(ir::TensorId tensor, int64_t replica) const;
  /// True when some worker hosts no replica holding some (row, shard) of `layout`: a read
  /// then all-gathers every replica's storage from all workers (every worker must read).
  bool read_needs_every_worker(const replication::VariableLayout& layout) const;
  /// host_collectives_, opened first if needed (a collective step of every worker).
  Collectives& host_collectives() const;
  /// Every replica's storage of `tensor`, [R] x its bytes, all-gathered over the workers.
  std::vector<std::byte> gather_replicas(const ir::TensorInfo& t, ir::TensorId tensor) const;
  /// Copies between host rows ([rows] + full shape) and the replicas' storage, through the
  /// variable's layout; `to_host` picks the direction.
  void transfer_variable(const ir::TensorInfo& t, ir::TensorId tensor, std::byte* host, bool to_host) const;
  /// The same with a given layout.
  void transfer_variable(const replication::VariableLayout& layout, const ir::TensorInfo& t, ir::TensorId tensor,
                         std::byte* host, bool to_host) const;
  /// The layout of one row per group (read_variable_groups).
  static replication::VariableLayout group_layout(const ir::TensorInfo& t);
  void transfer_remote_slot(ir::RemoteBufferId buffer, int64_t entry, std::byte* host, size_t bytes, bool to_host) const;
  void check_variable_bytes(const ir::TensorInfo& t, size_t bytes) const;
  void check_group_bytes(const ir::TensorInfo& t, const replication::VariableLayout& layout, size_t bytes) const;

  ir::Graph graph_;
  SessionOptions options_;
  HostedReplicas hosted_;
  Program program_;
  Schedule schedule_;
  std::string strategy_name_;
  int64_t iterations_ = 1;  ///< schedule iterations per run
  std::vector<std::unique_ptr<Collectives>> collectives_;  ///< per device index; empty when none is needed
  /// Host-buffer collectives over the R replicas, made when first needed (the host update,
  /// at construction; a read needing every worker); used by the host update during runs
  /// and by variable reads between them (under variables_mutex_).
  mutable std::unique_ptr<Collectives> host_collectives_;
  std::unique_ptr<HostUpdate> host_update_;  ///< weight_update_on_host of a training graph
  std::vector<std::unique_ptr<VirtualDevice>> devices_;
  // Per hosted replica (index = global replica - hosted_.first):
  std::vector<std::unique_ptr<memory::RemoteMemory>> remote_;
  std::vector<std::vector<std::byte>> offloaded_;  ///< optimizer state
  std::vector<std::vector<std::unique_ptr<streams::BoundedQueue>>> channels_;  ///< per ChannelPlan
  std::vector<std::unique_ptr<DeviceState>> states_;
  std::vector<std::string> notes_;
  RunTrace trace_;
  std::unique_ptr<StreamBinding> streams_;
  std::vector<int64_t> stream_items_;      ///< per stream: micro-batches per replica in a run
  std::vector<bool> stream_accumulates_;   ///< per stream: output mode sum
  std::vector<size_t> stage_ring_;         ///< per stage: ring buffers of the streams it reads in place (1: none)
  StreamStats stream_stats_;
  mutable std::mutex mutex_;               ///< guards the fields below, trace_ and stream_stats_
  std::condition_variable jobs_changed_;
  std::deque<Job> jobs_;
  uint64_t cancel_generation_ = 0;  ///< runs started before the last cancel() carry a lower one
  bool running_ = false;
  bool stopping_ = false;
  mutable std::recursive_mutex variables_mutex_;  ///< variable reads and writes against runs (hold_runs)
  std::atomic<int64_t> steps_{0};
  std::thread controller_;
};

}  // namespace plexus::runtime
