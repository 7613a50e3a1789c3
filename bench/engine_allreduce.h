// What mpi_allreduce_bench and gloo_allreduce_bench share: their options, the timing of a
// call across processes (warm-up, calibration, repetitions, the slowest process's time,
// the median), a collectives plugin loaded by path with one replica per process, and the
// table they print. Each program supplies its processes' barrier and max-reduction (MPI's
// or gloo's) and its raw peer (MPI_Allreduce, gloo::allreduce).
//
// Counters follow nccl-tests: algbw = bytes / time, busbw = algbw * 2(n-1)/n for n processes.
#ifndef PLEXUS_BENCH_ENGINE_ALLREDUCE_H
#define PLEXUS_BENCH_ENGINE_ALLREDUCE_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "plexus/collectives_plugin.h"

namespace bench {

struct EngineOptions {
  std::string plugin;     ///< --plugin=PATH
  std::string store_dir;  ///< --store-dir=DIR (gloo_allreduce_bench only)
  int repetitions = 5;    ///< --repetitions=N, >= 1
  double seconds = 0.2;   ///< --seconds=S per timed loop, > 0
  bool raw = false;       ///< --raw: also `raw <engine> <bytes> <calls> <seconds per call>` lines
};

/** Parses argv into `options` (whose plugin holds the default); false on anything unknown or
 *  out of range. --store-dir is accepted only when `store_dir_allowed`. */
bool parse_engine_options(int argc, char** argv, EngineOptions& options, bool store_dir_allowed);

/** The processes' own synchronisation (MPI's or gloo's), used only between timed loops. */
struct ProcessSync {
  std::function<void()> barrier;
  std::function<double(double)> max;  ///< the largest of every process's value
};

/** Median over repetitions of the slowest process's seconds per `call`; *calls is the number
 *  of calls per timed loop (the same on every process). */
double time_calls(const ProcessSync& sync, const EngineOptions& options, size_t bytes, int* calls,
                  const std::function<void()>& call);

/** The config of a communicator of `processes` replicas, one per process, this process's
 *  being `replica`, calls waiting 60 s, without a cluster definition (NULL / 0). */
plx_comm_config engine_config(int processes, int replica);

/** A collectives plugin loaded by path (dlopen) with a communicator of `config` (its
 *  pointers borrowed for the constructor only). Throws std::runtime_error naming the path or
 *  the plugin's message. Not copyable. */
class PluginComm {
 public:
  PluginComm(const std::string& path, const plx_comm_config& config);
  ~PluginComm();
  PluginComm(const PluginComm&) = delete;
  PluginComm& operator=(const PluginComm&) = delete;

  /** all_reduce sum of `count` floats over every replica; throws with the plugin's message. */
  void all_reduce(const float* send, float* recv, size_t count);

 private:
  const plx_collectives_plugin* plugin_ = nullptr;
  plx_comm* comm_ = nullptr;
  std::vector<int64_t> members_;
  int replica_;
  char message_[1024] = "";
};

/** The sizes measured: 4 KiB .. 64 MiB, powers of 4. */
std::vector<size_t> engine_sizes();

/** The table's title and header (`peer` names the raw contender, e.g. "MPI"). */
void print_header(int processes, const EngineOptions& options, const char* peer);

/** One row: the plugin's and the peer's time per call, bandwidths, and their ratio; with
 *  --raw also the raw lines for `plugin_engine` and `peer_engine`. */
void print_row(size_t bytes, int processes, const EngineOptions& options, int plugin_calls, double plugin_seconds,
               int peer_calls, double peer_seconds, const char* plugin_engine, const char* peer_engine);

}  // namespace bench

#endif  // PLEXUS_BENCH_ENGINE_ALLREDUCE_H
