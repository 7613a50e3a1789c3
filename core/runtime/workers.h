// Workers (seed 002; docs/design.md "Workers"): which process of a multi-process job this is,
// as the launcher tells it, so that programs started by mpirun need not link MPI.
#pragma once

#include <cstdint>

namespace plexus::runtime {

/// This process's place in the job: worker `index` of `count` (0 of 1 when alone).
struct WorkerPlace {
  int64_t count = 1;
  int64_t index = 0;
};

/// Reads a cluster definition (PLEXUS_CLUSTER, else TF_CONFIG: plugins/collectives_workers/cluster.h,
/// workers started by hand), else Open MPI's OMPI_COMM_WORLD_SIZE / OMPI_COMM_WORLD_RANK,
/// else the PMI_SIZE / PMI_RANK that MPICH-style launchers set; 0 of 1 when none is set
/// (no launcher). Throws InvalidArgument when a variable is set but malformed or out of
/// range, naming it.
/// Thread-safe (reads the environment only).
WorkerPlace workers_from_environment();

}  // namespace plexus::runtime
