// One worker of the MPI plugin's fault tests (fault_test.sh): every rank hosts one replica
// and runs steps of an all_reduce over all replicas; at --fault-step the --faulty-rank
// exits (--fault=exit) or stops participating (--fault=hang: it sleeps). The other ranks
// must fail that step with an error naming the missing replica within the plugin timeout,
// print it, and exit non-zero. Loads the plugin with dlopen, like the core does.
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "plexus/collectives_plugin.h"

namespace {

struct Options {
  std::string plugin;
  std::string fault = "none";  // none, exit, hang
  int faulty_rank = 1;
  int fault_step = 3;
  int steps = 6;
  int64_t timeout_ms = 2000;
};

bool parse(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&](const char* flag) -> const char* {
      const size_t n = std::strlen(flag);
      return arg.compare(0, n, flag) == 0 ? argv[i] + n : nullptr;
    };
    if (const char* v = value("--plugin=")) {
      options.plugin = v;
    } else if (const char* v = value("--fault=")) {
      options.fault = v;
    } else if (const char* v = value("--faulty-rank=")) {
      options.faulty_rank = std::atoi(v);
    } else if (const char* v = value("--fault-step=")) {
      options.fault_step = std::atoi(v);
    } else if (const char* v = value("--steps=")) {
      options.steps = std::atoi(v);
    } else if (const char* v = value("--timeout-ms=")) {
      options.timeout_ms = std::atoll(v);
    } else {
      std::fprintf(stderr, "fault_worker: unknown argument '%s'\n", arg.c_str());
      return false;
    }
  }
  if (options.plugin.empty() ||
      (options.fault != "none" && options.fault != "exit" && options.fault != "hang")) {
    std::fprintf(stderr,
                 "usage: fault_worker --plugin=PATH [--fault=none|exit|hang] [--faulty-rank=N] "
                 "[--fault-step=N] [--steps=N] [--timeout-ms=N]\n");
    return false;
  }
  return true;
}

// Reports the exit status on stdout (fault_test.sh checks it per rank) and returns it.
int finish(int rank, int status) {
  std::printf("rank %d exit %d\n", rank, status);
  std::fflush(stdout);
  return status;
}

int env_int(const char* name) {
  const char* text = std::getenv(name);
  return text != nullptr ? std::atoi(text) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!parse(argc, argv, options)) return 2;
  void* library = dlopen(options.plugin.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::fprintf(stderr, "fault_worker: %s\n", dlerror());
    return 2;
  }
  auto entry = reinterpret_cast<plx_collectives_plugin_entry>(
      dlsym(library, PLX_COLLECTIVES_PLUGIN_SYMBOL));
  const plx_collectives_plugin& plugin = *entry();
  const int rank = env_int("OMPI_COMM_WORLD_RANK");
  const int ranks = std::max(1, env_int("OMPI_COMM_WORLD_SIZE"));

  plx_comm_config config{};
  config.struct_size = sizeof(config);
  config.replication_factor = ranks;
  config.first_local_replica = rank;
  config.local_replicas = 1;
  config.timeout_ms = options.timeout_ms;
  plx_comm* comm = nullptr;
  char message[1024] = "";
  if (plugin.comm_create(&config, &comm, message, sizeof message) != PLX_OK) {
    std::fprintf(stderr, "rank %d: comm_create: %s\n", rank, message);
    return finish(rank, 1);
  }
  std::vector<int64_t> members(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) members[static_cast<size_t>(r)] = r;
  std::vector<float> gradient(4096, 1.0f);
  std::vector<float> sum(gradient.size());
  for (int step = 0; step < options.steps; ++step) {
    if (step == options.fault_step && rank == options.faulty_rank) {
      if (options.fault == "exit") _exit(3);  // dies mid-step, without MPI_Finalize
      if (options.fault == "hang") {
        std::this_thread::sleep_for(std::chrono::hours(1));
      }
    }
    plx_coll_args args{};
    args.struct_size = sizeof args;
    args.group = {members.data(), members.size()};
    args.replica = rank;
    args.send = gradient.data();
    args.recv = sum.data();
    args.count = gradient.size();
    args.dtype = PLX_DTYPE_FLOAT32;
    args.op = PLX_REDUCE_SUM;
    args.message = message;
    args.message_capacity = sizeof message;
    const auto start = std::chrono::steady_clock::now();
    const plx_status status = plugin.all_reduce(comm, &args);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (status != PLX_OK) {
      std::fprintf(stderr, "rank %d: step %d failed after %.2f s (status %d): %s\n", rank, step,
                   seconds, status, message);
      plugin.comm_destroy(comm);
      return finish(rank, 1);
    }
    if (sum[0] != static_cast<float>(ranks)) {
      std::fprintf(stderr, "rank %d: step %d: wrong sum %g\n", rank, step, sum[0]);
      return finish(rank, 1);
    }
  }
  plugin.comm_destroy(comm);
  std::printf("rank %d: %d steps done\n", rank, options.steps);
  return finish(rank, 0);
}
