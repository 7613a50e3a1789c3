#include "engine_allreduce.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace bench {
namespace {

// Calls per timed loop: enough for `seconds` at the pace of 3 calibration calls after 3
// warm-up calls (the slowest process's pace, so that every process makes the same number),
// at most about 256 MiB moved and 2000 calls, at least 3.
int iterations_for(size_t bytes, double seconds, double warmup_seconds_per_call) {
  const int most = static_cast<int>(std::clamp<size_t>((size_t{256} << 20) / bytes, 3, 2000));
  const double wanted = seconds / std::max(warmup_seconds_per_call, 1e-9);
  return std::clamp(static_cast<int>(std::min(wanted, 1e6)), 3, most);
}

double seconds_of(const std::function<void()>& body, int times) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < times; ++i) body();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

bool parse_engine_options(int argc, char** argv, EngineOptions& options, bool store_dir_allowed) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--plugin=", 0) == 0) {
      options.plugin = arg.substr(9);
    } else if (arg.rfind("--repetitions=", 0) == 0) {
      options.repetitions = std::atoi(arg.c_str() + 14);
    } else if (arg.rfind("--seconds=", 0) == 0) {
      options.seconds = std::atof(arg.c_str() + 10);
    } else if (store_dir_allowed && arg.rfind("--store-dir=", 0) == 0) {
      options.store_dir = arg.substr(12);
    } else if (arg == "--raw") {
      options.raw = true;
    } else {
      return false;
    }
  }
  return options.repetitions >= 1 && options.seconds > 0;
}

double time_calls(const ProcessSync& sync, const EngineOptions& options, size_t bytes, int* calls,
                  const std::function<void()>& call) {
  sync.barrier();
  seconds_of(call, 3);  // warm-up
  sync.barrier();
  *calls = iterations_for(bytes, options.seconds, sync.max(seconds_of(call, 3)) / 3);
  std::vector<double> seconds;
  for (int rep = 0; rep < options.repetitions; ++rep) {
    sync.barrier();
    call();
    sync.barrier();
    seconds.push_back(sync.max(seconds_of(call, *calls)) / *calls);
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

plx_comm_config engine_config(int processes, int replica) {
  plx_comm_config config{};
  config.struct_size = sizeof(config);
  config.replication_factor = processes;
  config.first_local_replica = replica;
  config.local_replicas = 1;
  config.timeout_ms = 60000;
  return config;
}

PluginComm::PluginComm(const std::string& path, const plx_comm_config& config)
    : replica_(static_cast<int>(config.first_local_replica)) {
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) throw std::runtime_error(dlerror());
  const auto entry = reinterpret_cast<plx_collectives_plugin_entry>(dlsym(library, PLX_COLLECTIVES_PLUGIN_SYMBOL));
  if (entry == nullptr) throw std::runtime_error(path + " has no " + PLX_COLLECTIVES_PLUGIN_SYMBOL);
  plugin_ = entry();
  if (plugin_->comm_create(&config, &comm_, message_, sizeof message_) != PLX_OK) {
    throw std::runtime_error(std::string("comm_create: ") + message_);
  }
  for (int64_t r = 0; r < config.replication_factor; ++r) members_.push_back(r);
}

PluginComm::~PluginComm() { plugin_->comm_destroy(comm_); }

void PluginComm::all_reduce(const float* send, float* recv, size_t count) {
  plx_coll_args args{};
  args.struct_size = sizeof args;
  args.group = {members_.data(), members_.size()};
  args.replica = replica_;
  args.send = send;
  args.recv = recv;
  args.count = count;
  args.dtype = PLX_DTYPE_FLOAT32;
  args.op = PLX_REDUCE_SUM;
  args.message = message_;
  args.message_capacity = sizeof message_;
  if (plugin_->all_reduce(comm_, &args) != PLX_OK) throw std::runtime_error(std::string("all_reduce: ") + message_);
}

std::vector<size_t> engine_sizes() {
  std::vector<size_t> sizes;
  for (size_t bytes = size_t{4} << 10; bytes <= size_t{64} << 20; bytes *= 4) sizes.push_back(bytes);
  return sizes;
}

void print_header(int processes, const EngineOptions& options, const char* peer) {
  std::printf("all_reduce sum float32, %d processes, median of %d repetitions (slowest process)\n", processes,
              options.repetitions);
  std::printf("%10s %11s | %10s %11s %11s | %7s us %11s %11s | %8s\n", "bytes", "calls p/r", "plugin us", "algbw GB/s",
              "busbw GB/s", peer, "algbw GB/s", "busbw GB/s", "overhead");
}

void print_row(size_t bytes, int processes, const EngineOptions& options, int plugin_calls, double plugin_seconds,
               int peer_calls, double peer_seconds, const char* plugin_engine, const char* peer_engine) {
  const double bus_factor = 2.0 * (processes - 1) / processes;
  const double plugin_algbw = static_cast<double>(bytes) / plugin_seconds / 1e9;
  const double peer_algbw = static_cast<double>(bytes) / peer_seconds / 1e9;
  std::printf("%10zu %5d/%-5d | %10.1f %11.2f %11.2f | %10.1f %11.2f %11.2f | %7.2fx\n", bytes, plugin_calls,
              peer_calls, plugin_seconds * 1e6, plugin_algbw, plugin_algbw * bus_factor, peer_seconds * 1e6, peer_algbw,
              peer_algbw * bus_factor, plugin_seconds / peer_seconds);
  if (options.raw) {
    std::printf("raw %s %zu %d %.9g\n", plugin_engine, bytes, plugin_calls, plugin_seconds);
    std::printf("raw %s %zu %d %.9g\n", peer_engine, bytes, peer_calls, peer_seconds);
  }
  std::fflush(stdout);
}

}  // namespace bench
