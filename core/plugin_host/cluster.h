// A cluster definition in the environment (seed 002's IPUMultiWorkerStrategy with
// TF_CONFIG; docs/design.md "Workers"): the workers of a job started by hand, one process
// per shell, without mpirun. The core reads it (runtime/workers.h: how many workers, which
// one this is) and hands it to the collectives plugin in plx_comm_config (collectives.h),
// so that a plugin finding its peers by address (gloo) never reads the environment. The
// programs that drive plugins as the core does (the conformance runner, the gloo bench)
// link this file alone, as the static library plexus_cluster, to fill their configs alike.
//   PLEXUS_CLUSTER='{"workers": ["host:port", ...], "index": i}'  (optional "rendezvous":
//                   a shared folder)
//   TF_CONFIG='{"cluster": {"worker": ["host:port", ...]}, "task": {"type": "worker", "index": i}}'
#pragma once

#include <plexus/collectives_plugin.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace plexus::plugin_host {

/// The job's workers and this process's place among them.
struct ClusterDefinition {
  std::vector<std::string> workers;  ///< "host:port" of each worker, in worker order
  int64_t index = 0;                 ///< this process's worker, in [0, workers.size())
  std::string rendezvous;            ///< a folder shared by the workers, or "" (PLEXUS_CLUSTER only)
  std::string source;                ///< the variable it came from: "PLEXUS_CLUSTER" or "TF_CONFIG"
};

/// Parses a definition given as PLEXUS_CLUSTER's or TF_CONFIG's JSON text (`source` names
/// which). Throws std::invalid_argument naming the variable and the field that is missing, of
/// the wrong type or out of range (no ir::Error: the programs above link no more of the core).
ClusterDefinition parse_cluster(const std::string& text, const std::string& source);

/// PLEXUS_CLUSTER if set, else TF_CONFIG if set, else nothing; throws as parse_cluster.
/// Thread-safe while no thread changes the environment.
std::optional<ClusterDefinition> cluster_from_environment();

/// A cluster definition, or none, as plx_comm_config carries it (plugin ABI 1.1). It owns
/// the strings and the array of address pointers it lends a config, so it must outlive
/// every config it filled; neither copied nor moved (the configs point into it).
/// Thread-safety: fill() is const and may run concurrently.
class ClusterFields {
 public:
  explicit ClusterFields(std::optional<ClusterDefinition> cluster = std::nullopt);
  ClusterFields(const ClusterFields&) = delete;
  ClusterFields& operator=(const ClusterFields&) = delete;

  /// Sets config's worker_addresses, num_worker_addresses, worker_index, rendezvous and
  /// cluster_source (NULL and 0 without a definition, rendezvous NULL when it has none);
  /// leaves every other field, struct_size included, to the caller.
  void fill(plx_comm_config& config) const;
  const std::optional<ClusterDefinition>& definition() const { return cluster_; }

 private:
  std::optional<ClusterDefinition> cluster_;
  std::vector<const char*> addresses_;  ///< into cluster_->workers
};

}  // namespace plexus::plugin_host
