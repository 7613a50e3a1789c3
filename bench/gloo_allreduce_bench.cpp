// gloo_allreduce_bench: all_reduce (sum, float32) across workers started separately (no
// mpirun) through the gloo collectives plugin (one replica per worker, loaded with dlopen
// as the runtime loads it), next to gloo's own gloo::allreduce on the same buffers, in the
// same run: the plugin's overhead (agreement exchange, member-order reduction, timeout
// polling) over Gloo's ring all-reduce. The gloo_allreduce_bench twin of mpi_allreduce_bench.
//
//   tests/plugins/conformance/launch_workers.sh 2 build-bench/bench/gloo_allreduce_bench
//       [--plugin=PATH] [--repetitions=N] [--seconds=S] [--store-dir=DIR] [--raw]
//
// Workers come from PLEXUS_CLUSTER='{"workers": ["host:port", ...], "index": i}' (the
// plugin reads it too and meets through worker 0's store). gloo's own context is a
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
#include <dlfcn.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plexus/collectives_plugin.h"

namespace {

struct Options {
  std::string plugin = PLEXUS_COLLECTIVES_GLOO_PLUGIN;
  std::string store_dir;
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
    } else if (arg.rfind("--store-dir=", 0) == 0) {
      options.store_dir = arg.substr(12);
    } else if (arg == "--raw") {
      options.raw = true;
    } else {
      return false;
    }
  }
  return options.repetitions >= 1 && options.seconds > 0;
}

struct Cluster {
  std::vector<std::string> workers;
  int index = 0;
};

Cluster cluster_from_environment() {
  const char* text = std::getenv("PLEXUS_CLUSTER");
  if (text == nullptr) throw std::runtime_error("PLEXUS_CLUSTER is not set (start the workers with launch_workers.sh)");
  const auto json = nlohmann::json::parse(text);
  Cluster cluster{json.at("workers").get<std::vector<std::string>>(), json.at("index").get<int>()};
  if (cluster.index < 0 || cluster.index >= static_cast<int>(cluster.workers.size())) {
    throw std::runtime_error("PLEXUS_CLUSTER: index out of range");
  }
  return cluster;
}

std::string host_of(const std::string& host_port) { return host_port.substr(0, host_port.rfind(':')); }
std::string port_of(const std::string& host_port) { return host_port.substr(host_port.rfind(':') + 1); }

// Calls per timed loop: enough for `seconds` (--seconds, default 0.2) at the pace of 3
// calibration calls after 3 warm-up calls (the slowest rank's pace, so that every rank
// makes the same number), at most about 256 MiB moved and 2000 calls, at least 3.
int iterations_for(size_t bytes, double seconds, double warmup_seconds_per_call) {
  const int most = static_cast<int>(std::clamp<size_t>((size_t{256} << 20) / bytes, 3, 2000));
  const double wanted = seconds / std::max(warmup_seconds_per_call, 1e-9);
  return std::clamp(static_cast<int>(std::min(wanted, 1e6)), 3, most);
}

void barrier(const std::shared_ptr<gloo::Context>& context) {
  gloo::BarrierOptions options(context);
  gloo::barrier(options);
}

double slowest(const std::shared_ptr<gloo::Context>& context, double mine) {
  double out = 0;
  gloo::AllreduceOptions options(context);
  options.setInput(&mine, 1);
  options.setOutput(&out, 1);
  options.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::max<double>));
  gloo::allreduce(options);
  return out;
}

// Median over repetitions of the slowest worker's seconds per call.
double time_calls(const std::shared_ptr<gloo::Context>& context, const Options& options, size_t bytes,
                  int* iterations_out, const std::function<void()>& call) {
  barrier(context);
  for (int i = 0; i < 3; ++i) call();  // warm-up
  barrier(context);
  const auto warmup_start = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) call();
  const double warmup = std::chrono::duration<double>(std::chrono::steady_clock::now() - warmup_start).count();
  const int iterations = iterations_for(bytes, options.seconds, slowest(context, warmup) / 3);
  *iterations_out = iterations;
  std::vector<double> seconds;
  for (int rep = 0; rep < options.repetitions; ++rep) {
    barrier(context);
    call();
    barrier(context);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) call();
    const double mine = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    seconds.push_back(slowest(context, mine) / iterations);
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

int run(const Options& options, const Cluster& cluster) {
  const int rank = cluster.index;
  const int ranks = static_cast<int>(cluster.workers.size());
  void* library = dlopen(options.plugin.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::fprintf(stderr, "worker %d: %s\n", rank, dlerror());
    return 2;
  }
  const auto entry = reinterpret_cast<plx_collectives_plugin_entry>(dlsym(library, PLX_COLLECTIVES_PLUGIN_SYMBOL));
  if (entry == nullptr) {
    std::fprintf(stderr, "worker %d: %s has no %s\n", rank, options.plugin.c_str(), PLX_COLLECTIVES_PLUGIN_SYMBOL);
    return 2;
  }
  const plx_collectives_plugin& plugin = *entry();
  const plx_comm_config config{sizeof(plx_comm_config), ranks, rank, 1, 60000};
  plx_comm* comm = nullptr;
  char message[1024] = "";
  if (plugin.comm_create(&config, &comm, message, sizeof message) != PLX_OK) {
    std::fprintf(stderr, "worker %d: comm_create: %s\n", rank, message);
    return 1;
  }

  // gloo's own context: a file store in a folder both workers see, a TCP device of its own.
  const std::string store_dir =
      options.store_dir.empty() ? "/tmp/plexus-gloo-bench-" + port_of(cluster.workers[0]) : options.store_dir;
  std::filesystem::create_directories(store_dir);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, ranks);
  gloo::transport::tcp::attr attr;
  attr.hostname = host_of(cluster.workers[static_cast<size_t>(rank)]);
  std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
  {
    gloo::rendezvous::FileStore store(store_dir);
    context->setTimeout(std::chrono::seconds(60));
    context->connectFullMesh(store, device);
  }

  std::vector<int64_t> members(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) members[static_cast<size_t>(r)] = r;
  const double bus_factor = 2.0 * (ranks - 1) / ranks;
  if (rank == 0) {
    std::printf("all_reduce sum float32, %d workers, median of %d repetitions (slowest worker)\n", ranks,
                options.repetitions);
    std::printf("%10s %11s | %10s %11s %11s | %10s %11s %11s | %8s\n", "bytes", "calls p/r", "plugin us", "algbw GB/s",
                "busbw GB/s", "gloo us", "algbw GB/s", "busbw GB/s", "overhead");
  }
  for (size_t bytes = size_t{4} << 10; bytes <= size_t{64} << 20; bytes *= 4) {
    const size_t count = bytes / sizeof(float);
    std::vector<float> send(count, 1.0f + static_cast<float>(rank));
    std::vector<float> recv(count, 0.0f);
    int plugin_calls = 0;
    int peer_calls = 0;
    const double plugin_seconds = time_calls(context, options, bytes, &plugin_calls, [&] {
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
        std::fprintf(stderr, "worker %d: all_reduce: %s\n", rank, message);
        std::exit(1);
      }
    });
    const float expected = static_cast<float>(ranks * (ranks + 1) / 2);
    if (recv.front() != expected || recv.back() != expected) {
      std::fprintf(stderr, "worker %d: plugin sum %g, expected %g\n", rank, recv.front(), expected);
      return 1;
    }
    const double gloo_seconds = time_calls(context, options, bytes, &peer_calls, [&] {
      gloo::AllreduceOptions opts(context);
      opts.setInput(send.data(), count);
      opts.setOutput(recv.data(), count);
      opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      gloo::allreduce(opts);
    });
    if (recv.front() != expected || recv.back() != expected) {
      std::fprintf(stderr, "worker %d: gloo sum %g, expected %g\n", rank, recv.front(), expected);
      return 1;
    }
    if (rank == 0) {
      const double plugin_algbw = static_cast<double>(bytes) / plugin_seconds / 1e9;
      const double gloo_algbw = static_cast<double>(bytes) / gloo_seconds / 1e9;
      std::printf("%10zu %5d/%-5d | %10.1f %11.2f %11.2f | %10.1f %11.2f %11.2f | %7.2fx\n", bytes, plugin_calls, peer_calls,
                  plugin_seconds * 1e6, plugin_algbw, plugin_algbw * bus_factor, gloo_seconds * 1e6, gloo_algbw,
                  gloo_algbw * bus_factor, plugin_seconds / gloo_seconds);
      if (options.raw) {
        std::printf("raw gloo_plugin %zu %d %.9g\n", bytes, plugin_calls, plugin_seconds);
        std::printf("raw gloo %zu %d %.9g\n", bytes, peer_calls, gloo_seconds);
      }
      std::fflush(stdout);
    }
  }
  barrier(context);
  plugin.comm_destroy(comm);
  if (rank == 0 && options.store_dir.empty()) std::filesystem::remove_all(store_dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!parse(argc, argv, options)) {
    std::fprintf(stderr,
                 "usage: launch_workers.sh N gloo_allreduce_bench [--plugin=PATH] [--repetitions=N] "
                 "[--seconds=S] [--store-dir=DIR] [--raw]\n");
    return 2;
  }
  try {
    return run(options, cluster_from_environment());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_allreduce_bench: %s\n", e.what());
    return 1;
  }
}
