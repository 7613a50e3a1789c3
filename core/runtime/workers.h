// Workers (seed 002; docs/design.md "Workers"): which process of a multi-process job this is,
// as the launcher tells it, so that programs started by mpirun need not link MPI.
#pragma once

#include <cstdint>
#include <optional>

#include "core/plugin_host/cluster.h"

namespace plexus::runtime {

/// This process's place in the job: worker `index` of `count` (0 of 1 when alone).
struct WorkerPlace {
  int64_t count = 1;
  int64_t index = 0;
};

/// The cluster definition in the environment (PLEXUS_CLUSTER, else TF_CONFIG:
/// core/plugin_host/cluster.h, workers started by hand), or none; the session hands it to its
/// collectives plugin. Throws InvalidArgument when one is set but malformed, naming the
/// variable and the field. Thread-safe (reads the environment only).
std::optional<plugin_host::ClusterDefinition> cluster_definition();

/// Reads the cluster definition (cluster_definition()), else Open MPI's OMPI_COMM_WORLD_SIZE /
/// OMPI_COMM_WORLD_RANK, else the PMI_SIZE / PMI_RANK that MPICH-style launchers set; 0 of 1 when none is set
/// (no launcher). Throws InvalidArgument when a variable is set but malformed or out of
/// range, naming it.
/// Thread-safe (reads the environment only).
WorkerPlace workers_from_environment();

}  // namespace plexus::runtime
