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

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "plexus/collectives_plugin.h"

namespace {

struct Options {
  std::string plugin = PLEXUS_COLLECTIVES_MPI_PLUGIN;
  int repetitions = 5;
  double seconds = 0.2;
  bool raw = false;
};

bool parse(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--plugin=", 0) == 0) {
      options.plugin = arg.substr(9);
    } else if (arg.rfind("--repetitions=", 0) == 0) {
      options.repetitions = std::atoi(arg.c_str() + 14);
    } else if (arg.rfind("--seconds=", 0) == 0) {
      options.seconds = std::atof(arg.c_str() + 10);
    } else if (arg == "--raw") {
      options.raw = true;
    } else {
      return false;
    }
  }
  return options.repetitions >= 1 && options.seconds > 0;
}

// Calls per timed loop: enough for `seconds` (--seconds, default 0.2) at the pace of 3
// calibration calls after 3 warm-up calls (the slowest rank's pace, so that every rank
// makes the same number), at most about 256 MiB moved and 2000 calls, at least 3.
int iterations_for(size_t bytes, double seconds, double warmup_seconds_per_call) {
  const int most = static_cast<int>(std::clamp<size_t>((size_t{256} << 20) / bytes, 3, 2000));
  const double wanted = seconds / std::max(warmup_seconds_per_call, 1e-9);
  return std::clamp(static_cast<int>(std::min(wanted, 1e6)), 3, most);
}

// Median over repetitions of the slowest rank's seconds per call.
double time_calls(const Options& options, size_t bytes, int* iterations_out, const std::function<void()>& call) {
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < 3; ++i) call();  // warm-up
  MPI_Barrier(MPI_COMM_WORLD);
  const auto warmup_start = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) call();
  double warmup = std::chrono::duration<double>(std::chrono::steady_clock::now() - warmup_start).count();
  double warmup_slowest = 0;
  MPI_Allreduce(&warmup, &warmup_slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  const int iterations = iterations_for(bytes, options.seconds, warmup_slowest / 3);
  *iterations_out = iterations;
  std::vector<double> seconds;
  for (int rep = 0; rep < options.repetitions; ++rep) {
    MPI_Barrier(MPI_COMM_WORLD);
    call();
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) call();
    double mine = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    seconds.push_back(slowest / iterations);
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  int ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  Options options;
  if (!parse(argc, argv, options)) {
    if (rank == 0) {
      std::fprintf(stderr, "usage: mpirun -np N mpi_allreduce_bench [--plugin=PATH] [--repetitions=N] [--seconds=S] [--raw]\n");
    }
    MPI_Finalize();
    return 2;
  }
  void* library = dlopen(options.plugin.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::fprintf(stderr, "rank %d: %s\n", rank, dlerror());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const auto entry = reinterpret_cast<plx_collectives_plugin_entry>(
      dlsym(library, PLX_COLLECTIVES_PLUGIN_SYMBOL));
  const plx_collectives_plugin& plugin = *entry();
  const plx_comm_config config{sizeof(plx_comm_config), ranks, rank, 1, 60000};
  plx_comm* comm = nullptr;
  char message[1024] = "";
  if (plugin.comm_create(&config, &comm, message, sizeof message) != PLX_OK) {
    std::fprintf(stderr, "rank %d: comm_create: %s\n", rank, message);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  std::vector<int64_t> members(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) members[static_cast<size_t>(r)] = r;

  const double bus_factor = 2.0 * (ranks - 1) / ranks;
  if (rank == 0) {
    std::printf("all_reduce sum float32, %d ranks, median of %d repetitions (slowest rank)\n",
                ranks, options.repetitions);
    std::printf("%10s %11s | %10s %11s %11s | %10s %11s %11s | %8s\n", "bytes", "calls p/r",
                "plugin us", "algbw GB/s", "busbw GB/s", "MPI us", "algbw GB/s", "busbw GB/s",
                "overhead");
  }
  for (size_t bytes = size_t{4} << 10; bytes <= size_t{64} << 20; bytes *= 4) {
    const size_t count = bytes / sizeof(float);
    std::vector<float> send(count, 1.0f + static_cast<float>(rank));
    std::vector<float> recv(count, 0.0f);
    int plugin_calls = 0;
    int peer_calls = 0;
    const double plugin_seconds = time_calls(options, bytes, &plugin_calls, [&] {
      plx_coll_args args{};
      args.struct_size = sizeof args;
      args.group = {members.data(), members.size()};
      args.replica = rank;
      args.send = send.data();
      args.recv = recv.data();
      args.count = count;
      args.dtype = PLX_DTYPE_FLOAT32;
      args.op = PLX_REDUCE_SUM;
      args.message = message;
      args.message_capacity = sizeof message;
      if (plugin.all_reduce(comm, &args) != PLX_OK) {
        std::fprintf(stderr, "rank %d: all_reduce: %s\n", rank, message);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    });
    const double mpi_seconds = time_calls(options, bytes, &peer_calls, [&] {
      MPI_Allreduce(send.data(), recv.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
    });
    if (rank == 0) {
      const double plugin_algbw = static_cast<double>(bytes) / plugin_seconds / 1e9;
      const double mpi_algbw = static_cast<double>(bytes) / mpi_seconds / 1e9;
      std::printf("%10zu %5d/%-5d | %10.1f %11.2f %11.2f | %10.1f %11.2f %11.2f | %7.2fx\n", bytes,
                  plugin_calls, peer_calls, plugin_seconds * 1e6, plugin_algbw, plugin_algbw * bus_factor,
                  mpi_seconds * 1e6, mpi_algbw, mpi_algbw * bus_factor,
                  plugin_seconds / mpi_seconds);
      if (options.raw) {
        std::printf("raw mpi_plugin %zu %d %.9g\n", bytes, plugin_calls, plugin_seconds);
        std::printf("raw mpi %zu %d %.9g\n", bytes, peer_calls, mpi_seconds);
      }
      std::fflush(stdout);
    }
  }
  plugin.comm_destroy(comm);
  MPI_Finalize();
  return 0;
}
