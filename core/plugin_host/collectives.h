// A session's collectives: the plugin chosen for it (collectives_plugin.h), one
// communicator over the session's replicas, and each replica's replication::Communicator
// view of it for the kernels. The C plugin types stay in collectives.cpp (Collectives::
// Plugin), so that nothing including this header sees the C ABI.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/plugin_host/cluster.h"
#include "core/plugin_host/plugin_library.h"
#include "core/replication/communicator.h"

namespace plexus::plugin_host {

/// Thread-safety: communicator(r) objects are used by replica r's thread only; abort() may
/// be called from any thread; reset() only when no collective is in flight.
class Collectives {
 public:
  /// Loads plugin `name` ("" = $PLEXUS_COLLECTIVES, else "local"), checks its table
  /// (struct_size, ABI version, every entry) and creates a communicator of
  /// `replication_factor` replicas of which this process hosts [first_local, first_local +
  /// local_replicas) (all of them unless the session has several workers, seed 002).
  /// `host_buffers`: the calls pass PLX_BUFFER_HOST (host memory: the weight update on the
  /// host), else PLX_BUFFER_DEVICE. `cluster`: the workers' cluster definition
  /// (runtime/workers.h, cluster_definition()), which the plugin gets in plx_comm_config's
  /// worker_addresses .. cluster_source (NULL / 0 without one). Throws ir::Error(Plugin)
  /// naming the plugin, its path and what is wrong.
  Collectives(const std::string& name, int64_t replication_factor, int64_t first_local, int64_t local_replicas,
              int64_t timeout_ms, bool host_buffers = false, std::optional<ClusterDefinition> cluster = std::nullopt);
  ~Collectives();
  Collectives(const Collectives&) = delete;
  Collectives& operator=(const Collectives&) = delete;

  /// The name the plugin reports, and where it was loaded from.
  std::string name() const;
  const std::string& path() const { return library_.path(); }

  /// Every replica, 0 .. R-1: the group of a call over all of them.
  const std::vector<int64_t>& everyone() const { return everyone_; }
  /// Communicator of hosted (global) replica `replica` (owned by this object).
  replication::Communicator* communicator(int64_t replica);

  /// Runs fn(communicator, local index) for every hosted replica, each on a thread of its
  /// own (a collective waits for every hosted member), and joins them. A call that throws
  /// aborts the communicator (waking the others); after all joined, the first error is
  /// rethrown and the communicator reset.
  void each_hosted(const std::function<void(replication::Communicator&, size_t)>& fn);
  /// Wakes every waiting member with an error (a replica failed) and marks the
  /// communicator aborted.
  void abort(const std::string& reason);
  /// After an abort: destroys the communicator (a local step; no other worker is waited
  /// for). The next use creates a fresh one (ensure_comm). No-op otherwise.
  void reset();
  /// Creates the communicator if reset() destroyed it: a collective step over every worker
  /// (they all must make it, in the same order). Called as a run or each_hosted begins, never
  /// as a failed one ends: a worker whose peer died then reports the failure at once instead
  /// of waiting for that peer to create a communicator, and a worker that gives up on the
  /// session (destroys it, maybe creating another) stays in step with the others.
  void ensure_comm();

 private:
  class View;
  struct Plugin;  ///< the plugin's C table, communicator configuration and communicator
  void create_comm();

  PluginLibrary library_;
  std::unique_ptr<Plugin> plugin_;
  std::atomic<bool> aborted_{false};
  std::vector<std::unique_ptr<View>> views_;
  std::vector<int64_t> everyone_;
};

}  // namespace plexus::plugin_host
