// A cluster definition in the environment (seed 002's IPUMultiWorkerStrategy with
// TF_CONFIG; docs/design.md "Workers"): the workers of a job started by hand, one process
// per shell, without mpirun. Read by the core (how many workers, which one this is) and by
// plugins that find their peers from it (the Gloo collectives plugin), so both read the
// same definition the same way.
//   PLEXUS_CLUSTER='{"workers": ["host:port", ...], "index": i}'  (optional "rendezvous":
//                   a shared folder)
//   TF_CONFIG='{"cluster": {"worker": ["host:port", ...]}, "task": {"type": "worker", "index": i}}'
#ifndef PLEXUS_COLLECTIVES_WORKERS_CLUSTER_H
#define PLEXUS_COLLECTIVES_WORKERS_CLUSTER_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace plexus::collectives::workers {

/// The job's workers and this process's place among them.
struct ClusterDefinition {
  std::vector<std::string> workers;  ///< "host:port" of each worker, in worker order
  int64_t index = 0;                 ///< this process's worker, in [0, workers.size())
  std::string rendezvous;            ///< a folder shared by the workers, or "" (PLEXUS_CLUSTER only)
  std::string source;                ///< the variable it came from: "PLEXUS_CLUSTER" or "TF_CONFIG"
};

/// Parses a definition given as PLEXUS_CLUSTER's or TF_CONFIG's JSON text (`source` names
/// which). Throws std::invalid_argument naming the variable and the field that is missing, of
/// the wrong type or out of range.
ClusterDefinition parse_cluster(const std::string& text, const std::string& source);

/// PLEXUS_CLUSTER if set, else TF_CONFIG if set, else nothing. Thread-safe while no thread
/// changes the environment.
std::optional<ClusterDefinition> cluster_from_environment();

}  // namespace plexus::collectives::workers

#endif  // PLEXUS_COLLECTIVES_WORKERS_CLUSTER_H
