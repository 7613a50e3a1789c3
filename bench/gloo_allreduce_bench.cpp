// gloo_allreduce_bench: all_reduce (sum, float32) across workers started separately (no
// mpirun) through the gloo collectives plugin (one replica per worker, loaded with dlopen
// as the runtime loads it), next to gloo's own gloo::allreduce on the same buffers, in the
// same run: the plugin's overhead (agreement exchange, member-order reduction, timeout
// polling) over Gloo's ring all-reduce. The gloo_allreduce_bench twin of mpi_allreduce_bench.
//
//   tests/plugins/conformance/launch_workers.sh 2 build-bench/bench/gloo_allreduce_bench
//       [--plugin=PATH] [--repetitions=N] [--seconds=S] [--store-dir=DIR] [--raw]
//
// Workers come from PLEXUS_CLUSTER='{"workers": ["host:port", ...], "index": i}', read by the
// core's parser (core/plugin_host/cluster.h) and passed to the plugin in plx_comm_config as
// the core passes it (the plugin meets through worker 0's store). gloo's own context is a
// gloo::rendezvous::Context over a gloo::rendezvous::FileStore in --store-dir (a folder
// every worker sees; default /tmp/plexus-gloo-bench-<worker 0's port>; worker 0 removes
// it at the end) and its own TCP device on the worker's host.
//
// Timing as in mpi_allreduce_bench: for each size B (4 KiB .. 64 MiB, powers of 4) and
// each contender: 3 warm-up calls, 3 calls that set the number of calls per timed loop,
// then per repetition a barrier, one call, a barrier and `iterations` calls timed on
// every worker; the time of a repetition is the slowest worker's (a max all-reduce over
// gloo's context); the median of the repetitions is reported. algbw = B / time,
// busbw = algbw * 2(n-1)/n for n workers (nccl-tests). --raw adds one line per size and
// contender: `raw <engine> <bytes> <calls> <seconds per call>` (engines gloo_plugin, gloo).
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/plugin_host/cluster.h"
#include "engine_allreduce.h"

namespace {

using Cluster = plexus::plugin_host::ClusterDefinition;

std::string host_of(const std::string& host_port) { return host_port.substr(0, host_port.rfind(':')); }
std::string port_of(const std::string& host_port) { return host_port.substr(host_port.rfind(':') + 1); }

// gloo's own context: a file store in `store_dir` (every worker sees it), a TCP device of its own.
std::shared_ptr<gloo::Context> gloo_context(const Cluster& cluster, const std::string& store_dir) {
  std::filesystem::create_directories(store_dir);
  auto context = std::make_shared<gloo::rendezvous::Context>(static_cast<int>(cluster.index),
                                                              static_cast<int>(cluster.workers.size()));
  gloo::transport::tcp::attr attr;
  attr.hostname = host_of(cluster.workers[static_cast<size_t>(cluster.index)]);
  std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(store_dir);
  context->setTimeout(std::chrono::seconds(60));
  context->connectFullMesh(store, device);
  return context;
}

bench::ProcessSync gloo_sync(const std::shared_ptr<gloo::Context>& context) {
  return {[context] {
            gloo::BarrierOptions options(context);
            gloo::barrier(options);
          },
          [context](double mine) {
            double most = 0;
            gloo::AllreduceOptions options(context);
            options.setInput(&mine, 1);
            options.setOutput(&most, 1);
            options.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::max<double>));
            gloo::allreduce(options);
            return most;
          }};
}

void expect_sum(const std::vector<float>& recv, int workers, const char* engine) {
  const float expected = static_cast<float>(workers * (workers + 1) / 2);
  if (recv.front() != expected || recv.back() != expected) {
    throw std::runtime_error(std::string(engine) + " sum " + std::to_string(recv.front()) + ", expected " +
                             std::to_string(expected));
  }
}

// The Gloo plugin next to gloo::allreduce for every size; worker 0 prints.
void run(const bench::EngineOptions& options, const Cluster& cluster) {
  const int rank = static_cast<int>(cluster.index);
  const int workers = static_cast<int>(cluster.workers.size());
  plx_comm_config config = bench::engine_config(workers, rank);
  const plexus::plugin_host::ClusterFields fields(cluster);
  fields.fill(config);
  bench::PluginComm plugin(options.plugin, config);
  const std::string store_dir =
      options.store_dir.empty() ? "/tmp/plexus-gloo-bench-" + port_of(cluster.workers[0]) : options.store_dir;
  const std::shared_ptr<gloo::Context> context = gloo_context(cluster, store_dir);
  const bench::ProcessSync sync = gloo_sync(context);
  if (rank == 0) bench::print_header(workers, options, "gloo");
  for (const size_t bytes : bench::engine_sizes()) {
    const size_t count = bytes / sizeof(float);
    std::vector<float> send(count, 1.0f + static_cast<float>(rank));
    std::vector<float> recv(count, 0.0f);
    int plugin_calls = 0;
    int peer_calls = 0;
    const double plugin_seconds = bench::time_calls(sync, options, bytes, &plugin_calls,
                                                    [&] { plugin.all_reduce(send.data(), recv.data(), count); });
    expect_sum(recv, workers, "plugin");
    const double gloo_seconds = bench::time_calls(sync, options, bytes, &peer_calls, [&] {
      gloo::AllreduceOptions opts(context);
      opts.setInput(send.data(), count);
      opts.setOutput(recv.data(), count);
      opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      gloo::allreduce(opts);
    });
    expect_sum(recv, workers, "gloo");
    if (rank == 0) {
      bench::print_row(bytes, workers, options, plugin_calls, plugin_seconds, peer_calls, gloo_seconds, "gloo_plugin",
                       "gloo");
    }
  }
  sync.barrier();
  if (rank == 0 && options.store_dir.empty()) std::filesystem::remove_all(store_dir);
}

}  // namespace

int main(int argc, char** argv) {
  bench::EngineOptions options;
  options.plugin = PLEXUS_COLLECTIVES_GLOO_PLUGIN;
  if (!bench::parse_engine_options(argc, argv, options, true)) {
    std::fprintf(stderr,
                 "usage: launch_workers.sh N gloo_allreduce_bench [--plugin=PATH] [--repetitions=N] "
                 "[--seconds=S] [--store-dir=DIR] [--raw]\n");
    return 2;
  }
  try {
    const auto cluster = plexus::plugin_host::cluster_from_environment();
    if (!cluster) throw std::runtime_error("no PLEXUS_CLUSTER (start the workers with launch_workers.sh)");
    run(options, *cluster);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_allreduce_bench: %s\n", e.what());
    return 1;
  }
}
