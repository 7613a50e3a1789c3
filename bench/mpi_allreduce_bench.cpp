// mpi_allreduce_bench: all_reduce (sum, float32) across MPI ranks through the mpi
// collectives plugin (one replica per rank, loaded with dlopen as the runtime loads it),
// next to plain MPI_Allreduce on the same buffers, in the same run: the plugin's overhead
// (agreement exchange, chain in member order, timeout polling) over Open MPI's own.
//
//   mpirun -np 2 build-bench/bench/mpi_allreduce_bench [--plugin=PATH] [--repetitions=N]
//       [--seconds=S] [--raw]
//
// Whole-program timing, not Google Benchmark: every rank must make the same number of
// calls, which Google Benchmark's adaptive iteration counts do not guarantee. For each size
// B (4 KiB .. 64 MiB, powers of 4) and each contender: 3 warm-up calls, 3 calls that set
// the number of calls per timed loop (iterations_for), then per repetition a barrier, one
// call, a barrier and `iterations` calls timed on every rank; the time of a repetition is
// the slowest rank's (MPI_Allreduce max); the median of the repetitions is reported. Counters follow nccl-tests:
// algbw = B / time, busbw = algbw * 2(n-1)/n for n ranks (n = 2: busbw = algbw).
// --raw adds one line per size and contender: `raw <engine> <bytes> <calls> <seconds per
// call>` (engines mpi_plugin, mpi), which bench/collectives_engines.sh reads.
#include <dlfcn.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "engine_allreduce.h"

namespace {

// The MPI plugin next to MPI_Allreduce for every size; rank 0 prints.
void run(const bench::EngineOptions& options, int rank, int ranks) {
  const bench::ProcessSync sync{[] { MPI_Barrier(MPI_COMM_WORLD); },
                                [](double mine) {
                                  double most = 0;
                                  MPI_Allreduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                                  return most;
                                }};
  bench::PluginComm plugin(options.plugin, bench::engine_config(ranks, rank));
  if (rank == 0) bench::print_header(ranks, options, "MPI");
  for (const size_t bytes : bench::engine_sizes()) {
    const size_t count = bytes / sizeof(float);
    std::vector<float> send(count, 1.0f + static_cast<float>(rank));
    std::vector<float> recv(count, 0.0f);
    int plugin_calls = 0;
    int peer_calls = 0;
    const double plugin_seconds = bench::time_calls(sync, options, bytes, &plugin_calls,
                                                    [&] { plugin.all_reduce(send.data(), recv.data(), count); });
    const double mpi_seconds = bench::time_calls(sync, options, bytes, &peer_calls, [&] {
      MPI_Allreduce(send.data(), recv.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    });
    if (rank == 0) {
      bench::print_row(bytes, ranks, options, plugin_calls, plugin_seconds, peer_calls, mpi_seconds, "mpi_plugin", "mpi");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  // MPI as the plugin initializes it in a Plexus program (use_default_eager_limit in
  // plugins/collectives_mpi/mpi_runtime.h), for both contenders: a 4 KiB envelope goes eagerly.
  setenv("OMPI_MCA_btl_vader_eager_limit", "8192", /*overwrite=*/0);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  int ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  bench::EngineOptions options;
  options.plugin = PLEXUS_COLLECTIVES_MPI_PLUGIN;
  if (!bench::parse_engine_options(argc, argv, options, false)) {
    if (rank == 0) {
      std::fprintf(stderr, "usage: mpirun -np N mpi_allreduce_bench [--plugin=PATH] [--repetitions=N] [--seconds=S] [--raw]\n");
    }
    MPI_Finalize();
    return 2;
  }
  try {
    run(options, rank, ranks);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return 0;
}
