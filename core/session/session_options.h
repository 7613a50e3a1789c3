// The options of a session (the C API's plx_session_options) and what follows from them
// alone: their checks, and the replicas this worker hosts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/compile/placement.h"
#include "core/runtime/replica_storage.h"
#include "core/streams/host_array_layout.h"

namespace plexus::session {

/// The output modes of device-to-host streams (streams/host_array_layout.h).
using streams::OutputMode;

struct SessionOptions {
  int64_t device_iterations = 1;      ///< iterations per run, >= 1
  int64_t gradient_accumulation = 1;  ///< micro-batches per weight update, >= 1
  size_t device_memory_bytes = 0;     ///< arena capacity per device; 0 = no limit
  int threads_per_device = 0;         ///< threads a device may use (GEMM panels); 0 = cores / devices
  std::string collectives_plugin;     ///< "" = $PLEXUS_COLLECTIVES, else "local"; loaded when needed
  int64_t collective_timeout_ms = 60000;  ///< how long a collective waits for a missing replica
  /// Stages of blocks and their devices; empty: auto-staging from the blocks' devices, or
  /// one stage when the IR has no blocks (placement.h).
  std::vector<compile::StageSpec> stages;
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
  /// Gradient buckets (core/compile/gradient_buckets.h; PyTorch DDP's bucket_cap_mb): the
  /// update step's all-reduces of gradients are fused into calls of about this many bytes
  /// (a gradient larger than the cap is a call of its own), with the same weights bit for
  /// bit; 0 = one all-reduce per gradient. Default 25 MiB, DDP's.
  size_t gradient_bucket_bytes = size_t{25} << 20;
  bool profile = false;                  ///< record a RunTrace of every run
  /// Device-side buffers per stream and replica filled ahead of compute by the io threads
  /// (docs/design.md "Streaming layer"); 0: devices copy from the host themselves.
  int64_t prefetch_depth = 2;
  int io_threads = 1;  ///< threads of the session's io_context, >= 1
  /// Workers (seed 002; docs/design.md "Workers"): the graph's R replicas are split over
  /// num_workers processes, each running a session with the same graph and options but its
  /// own worker_index; worker w hosts global replicas [w R/W, (w+1) R/W). R must be a
  /// multiple of num_workers, and the collectives plugin must serve several processes
  /// ("mpi"). Streams carry the hosted replicas only. num_workers = 0 takes both from the
  /// launcher's environment (workers.h; one worker without a launcher).
  int64_t num_workers = 1;
  int64_t worker_index = 0;
};

/// Checks every option on its own (ranges, the output mode, every_n's period dividing
/// device_iterations). Throws InvalidArgument naming the option, its value and the rule.
void check_session_options(const SessionOptions& options);

/// `options` with num_workers = 0 replaced by the launcher's environment (workers.h).
/// Throws InvalidArgument for a malformed environment.
SessionOptions resolve_workers(SessionOptions options);

/// The global replicas worker options.worker_index of options.num_workers (>= 1) hosts:
/// an equal share of the `replication_factor` replicas (seed 002). Throws InvalidArgument
/// when num_workers does not divide the replication factor.
runtime::HostedReplicas hosted_by_worker(const SessionOptions& options, int64_t replication_factor);

}  // namespace plexus::session
