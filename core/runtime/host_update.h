// The weight update on the host (seed 002, "Distributed training": host_call with
// IPUMultiWorkerStrategy(variables_on_host=True); docs/design.md "Workers"). Under the session
// option weight_update_on_host every weight-update op (ir::OpSchema::gradient_input: adamw_,
// scaled_add_ as SGD) of the update phase leaves the devices:
//  - each hosted replica's device copies the op's gradient to host memory as soon as the
//    op that finishes it has run (for gradient accumulation: at the start of the update
//    step), and goes on with the backward pass;
//  - one host thread per hosted replica all-reduces the gradients (mean over all R
//    replicas of all workers, PLX_BUFFER_HOST calls on a communicator of their own) in a
//    fixed order (the order the backward pass finishes them), overlapping the devices;
//  - the worker's first hosted replica's thread (the worker leader) runs the op's own
//    kernel on the host: on the host copy of the weight and on the optimizer state, which
//    lives only here (no device holds it; it is one copy per worker, not per replica);
//  - each device, in its update step, waits for the op and copies the new weight in, so
//    the next forward pass sees it.
// The same plugin reduces in the same member order as the device-side all_reduce_, so the
// host update trains to the same weights bit for bit. At the first run the host weights
// are broadcast from replica 0 (worker 0) to every replica, as Horovod's initial broadcast.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/ir/graph.h"
#include "core/plugin_host/collectives.h"
#include "core/compile/program.h"

namespace plexus::runtime {

struct HostedReplicas;

/// Thread-safety: post(), wait_and_copy() are called by device threads; abort() from any
/// thread; the rest by the session while no run is in progress (begin_run() starts the host
/// threads, end_run() joins them).
class HostUpdate {
 public:
  /// Storage of variable `tensor` on hosted (global) replica `replica` (the session's).
  using DeviceBuffer = std::function<std::byte*(ir::TensorId tensor, int64_t replica)>;

  /// Finds the weight-update ops of `graph` (update phase, ir::OpSchema::gradient_input) and
  /// allocates their host weights, gradients and optimizer state. With gradient
  /// accumulation (program.micro_batches > 1) gradients go to the host at the start of the
  /// update step. `collectives` (host buffers; null for R = 1) all-reduce and broadcast
  /// over the R replicas; it must outlive this object, and nothing else may call it while
  /// a run is in progress. Throws InvalidArgument when the graph has no weight update,
  /// Unsupported for a weight or optimizer state that is not one value on all replicas
  /// (grouped, replica-sharded, remote) or an op input that is neither weight, gradient nor
  /// state.
  HostUpdate(const ir::Graph& graph, const compile::Program& program, int64_t replication_factor, int64_t first_hosted,
             int64_t hosted, plugin_host::Collectives* collectives, DeviceBuffer device_buffer);
  ~HostUpdate();
  HostUpdate(const HostUpdate&) = delete;
  HostUpdate& operator=(const HostUpdate&) = delete;

  /// True for a weight-update op that runs on the host.
  bool runs_on_host(ir::OpId op) const { return index_.count(op) != 0; }
  /// The host storage of optimizer state `root` (a storage root); null when not host state.
  std::byte* state(ir::TensorId root) const;
  /// Host-updated ops whose gradient is final once op `op` has run (posted after it).
  const std::vector<ir::OpId>& posted_after(ir::OpId op) const;
  /// Host-updated ops of stage `stage` whose gradient is posted at the start of its update step.
  std::vector<ir::OpId> posted_at_update(int32_t stage) const;
  /// The gradient of host-updated op `op` (a storage root).
  ir::TensorId gradient(ir::OpId op) const;

  /// Device side: hands replica `replica`'s (global index) gradient of `op` to its host thread.
  void post(ir::OpId op, int64_t replica, const std::byte* gradient);
  /// Device side: waits until the host has applied `op` for `iteration` (of this run), then
  /// copies the weight to `weight`. Throws Cancelled after abort().
  void wait_and_copy(ir::OpId op, int64_t iteration, std::byte* weight);

  /// Host weights <- hosted replica `first_hosted`'s device copy of `weight` (after the
  /// session wrote the variable; the next run broadcasts it again); no-op for a tensor
  /// that is not a host-updated weight.
  void refresh(ir::TensorId weight);
  /// Starts a run of `iterations` steps: at the first run, and after a write of a weight or
  /// a failed run (R > 1), broadcasts every weight from replica 0 to all replicas and
  /// copies it to the devices (so replicas that a failure left apart agree again), then
  /// starts the host
  /// threads. A host thread that fails calls `on_failure` with the reason (the session
  /// aborts the run). Throws what the broadcast throws (nothing is started then).
  void begin_run(int64_t iterations, std::function<void(const std::string&)> on_failure);
  /// Joins the host threads; returns the first error of one (else null).
  std::exception_ptr end_run();
  /// Wakes every waiting device and host thread with Cancelled and aborts the collectives.
  void abort(const std::string& reason);

 private:
  struct Update;
  /// The host update of weight-update op `o`, its optimizer state added to state_; the
  /// kernel is bound later (bind_kernel), once every buffer is in place.
  std::unique_ptr<Update> make_update(const ir::Graph& graph, const compile::Program& program, ir::OpId o);
  /// u.kernel <- the op's own kernel on the host weight, the first hosted replica's
  /// gradient and the host optimizer state.
  void bind_kernel(const ir::Graph& graph, Update& u, int64_t replication_factor);
  void run_host(size_t local, int64_t iterations);
  void broadcast_weights();
  template <class Ready>
  void wait(std::unique_lock<std::mutex>& lock, Ready ready);

  int64_t first_hosted_, hosted_;
  DeviceBuffer device_buffer_;
  std::vector<std::unique_ptr<Update>> updates_;  ///< in the order their gradients are finished
  std::map<ir::OpId, size_t> index_;              ///< op -> updates_ index
  std::map<ir::OpId, std::vector<ir::OpId>> posted_after_;
  std::map<ir::TensorId, std::vector<std::byte>> state_;  ///< optimizer state roots -> host storage
  plugin_host::Collectives* collectives_;                      ///< the session's host-buffer collectives; null for R = 1
  bool synced_ = false;  ///< every replica holds replica 0's weights (no broadcast needed)
  std::vector<std::thread> threads_;
  std::vector<std::exception_ptr> errors_;
  std::function<void(const std::string&)> on_failure_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool aborted_ = false;
  std::string abort_reason_;
};

}  // namespace plexus::runtime
