// allreduce_bench: all_reduce (sum, float32) among 2 replica threads through the local
// collectives plugin, loaded with dlopen as the runtime loads it, next to single-thread
// memcpy at the same sizes measured in the same run.
//
// Benchmarks, all with real (wall-clock) time, sizes 4 KiB .. 64 MiB in powers of 4:
//   BM_Memcpy/bytes:B       memcpy of B bytes between two buffers; bandwidth = B / time
//   BM_AllReduce/bytes:B    one all_reduce of B bytes (B / 4 floats) per replica, timed on
//                           replica 0 (every call ends with a barrier, so all replicas finish
//                           together); replica 1 runs on its own thread
// Counters follow nccl-tests: algbw = B / time, busbw = algbw * 2(n-1)/n for n replicas
// (for n = 2, busbw = algbw). "bytes" is B. A summary at the end compares busbw with the
// memcpy bandwidth of the same size (target: >= 50% at 16 MiB).
//
//   build/bench/allreduce_bench [--plugin=PATH] [--benchmark_repetitions=3 ...]
// PATH defaults to the plugin built next to this program.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "plexus/collectives_plugin.h"

namespace {

constexpr int64_t kReplicas = 2;
constexpr int64_t kTimeoutMs = 60000;

std::string g_plugin_path = PLEXUS_COLLECTIVES_LOCAL_PLUGIN;

/// A 64-byte-aligned buffer, as the runtime's device arenas hand out, filled with `value`
/// (which also maps every page before any timing). Alignment matters on some CPUs: glibc's
/// memcpy uses `rep movsb` for mid sizes, which runs at ~2 GB/s on the Zen development
/// machines when the destination sits a few bytes past the source modulo 64.
template <typename T>
class AlignedBuffer {
 public:
  AlignedBuffer(size_t count, T value)
      : data_(static_cast<T*>(std::aligned_alloc(64, round_up(count * sizeof(T))))), count_(count) {
    if (data_ == nullptr) throw std::bad_alloc();
    for (size_t i = 0; i < count; ++i) data_.get()[i] = value;
  }
  T* data() { return data_.get(); }
  size_t size() const { return count_; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  static size_t round_up(size_t bytes) { return (bytes + 63) / 64 * 64; }
  std::unique_ptr<T, Free> data_;
  size_t count_;
};

/// The plugin's table, loaded on first use; NULL (with a message) if loading failed.
const plx_collectives_plugin* load_plugin(std::string* error) {
  static std::string load_error;
  static const plx_collectives_plugin* table = []() -> const plx_collectives_plugin* {
    void* handle = dlopen(g_plugin_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      load_error = std::string("dlopen failed: ") + dlerror();
      return nullptr;
    }
    auto entry = reinterpret_cast<plx_collectives_plugin_entry>(
        dlsym(handle, PLX_COLLECTIVES_PLUGIN_SYMBOL));
    if (entry == nullptr) {
      load_error = g_plugin_path + " does not export " PLX_COLLECTIVES_PLUGIN_SYMBOL;
      return nullptr;
    }
    return entry();
  }();
  *error = load_error;
  return table;
}

/// One communicator and one pair of buffers per replica, for one benchmark run.
class Replicas {
 public:
  Replicas(const plx_collectives_plugin& plugin, size_t count) : plugin_(plugin), count_(count) {
    plx_comm_config config{};
    config.struct_size = sizeof(config);
    config.replication_factor = kReplicas;
    config.local_replicas = kReplicas;
    config.timeout_ms = kTimeoutMs;
    char message[256] = "";
    if (plugin_.comm_create(&config, &comm_, message, sizeof(message)) != PLX_OK) error_ = message;
    for (int64_t r = 0; r < kReplicas; ++r) {
      send_.emplace_back(count, 1.0f + static_cast<float>(r));
      recv_.emplace_back(count, 0.0f);
    }
  }
  ~Replicas() { plugin_.comm_destroy(comm_); }
  Replicas(const Replicas&) = delete;
  Replicas& operator=(const Replicas&) = delete;

  /// Replica r's all_reduce; on failure records the message, aborts the communicator (so
  /// that the other replica stops waiting) and returns false.
  bool all_reduce(int64_t r) {
    const int64_t members[kReplicas] = {0, 1};
    char message[512] = "";
    plx_coll_args args{};
    args.struct_size = sizeof(args);
    args.group = {members, kReplicas};
    args.replica = r;
    args.send = send_[static_cast<size_t>(r)].data();
    args.recv = recv_[static_cast<size_t>(r)].data();
    args.count = count_;
    args.dtype = PLX_DTYPE_FLOAT32;
    args.op = PLX_REDUCE_SUM;
    args.buffer_kind = PLX_BUFFER_DEVICE;
    args.message = message;
    args.message_capacity = sizeof(message);
    if (plugin_.all_reduce(comm_, &args) == PLX_OK) return true;
    if (!failed_.exchange(true)) error_ = "replica " + std::to_string(r) + ": " + message;
    plugin_.abort(comm_, "the other replica failed");
    return false;
  }

  bool ok() const { return comm_ != nullptr && !failed_.load(); }
  const std::string& error() const { return error_; }

 private:
  const plx_collectives_plugin& plugin_;
  size_t count_;
  plx_comm* comm_ = nullptr;
  std::vector<AlignedBuffer<float>> send_;
  std::vector<AlignedBuffer<float>> recv_;
  std::atomic<bool> failed_{false};
  std::string error_;
};

void set_bandwidth_counters(benchmark::State& state, size_t bytes, double bus_factor) {
  using benchmark::Counter;
  const auto b = static_cast<double>(bytes);
  state.counters["bytes"] = Counter(b);
  state.counters["algbw"] = Counter(b, Counter::kIsIterationInvariantRate, Counter::kIs1000);
  if (bus_factor > 0) {
    state.counters["busbw"] =
        Counter(b * bus_factor, Counter::kIsIterationInvariantRate, Counter::kIs1000);
  }
}

void BM_AllReduce(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  std::string error;
  const plx_collectives_plugin* plugin = load_plugin(&error);
  if (plugin == nullptr) {
    state.SkipWithError(error.c_str());
    return;
  }
  Replicas replicas(*plugin, bytes / sizeof(float));
  if (!replicas.ok()) {
    state.SkipWithError(replicas.error().c_str());
    return;
  }
  // The other replicas make one warm-up call and then one call per timed iteration.
  const auto calls = static_cast<int64_t>(state.max_iterations) + 1;
  std::vector<std::thread> others;
  for (int64_t r = 1; r < kReplicas; ++r) {
    others.emplace_back([&replicas, r, calls] {
      for (int64_t i = 0; i < calls && replicas.all_reduce(r); ++i) {
      }
    });
  }
  bool ok = replicas.all_reduce(0);  // warm-up: both threads are running and have met once
  for (auto _ : state) {
    if (!ok || !(ok = replicas.all_reduce(0))) {
      state.SkipWithError(replicas.error().c_str());
      break;
    }
  }
  for (std::thread& thread : others) thread.join();
  const double n = static_cast<double>(kReplicas);
  set_bandwidth_counters(state, bytes, 2.0 * (n - 1.0) / n);
}

void BM_Memcpy(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  AlignedBuffer<char> src(bytes, 1);
  AlignedBuffer<char> dst(bytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  set_bandwidth_counters(state, bytes, 0);
}

BENCHMARK(BM_Memcpy)->ArgName("bytes")->RangeMultiplier(4)->Range(4 << 10, 64 << 20)->UseRealTime();
BENCHMARK(BM_AllReduce)
    ->ArgName("bytes")
    ->RangeMultiplier(4)
    ->Range(4 << 10, 64 << 20)
    ->UseRealTime();

/// The console output, then per size: all_reduce busbw / memcpy bandwidth.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      // One value per (benchmark, size): the median with repetitions, else the last run.
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (run.run_type == Run::RT_Aggregate && !median) continue;
      const auto bytes = static_cast<int64_t>(run.counters.at("bytes").value);
      const bool all_reduce = run.benchmark_name().rfind("BM_AllReduce", 0) == 0;
      auto& slot = all_reduce ? busbw_[bytes] : memcpy_[bytes];
      if (median || !medians_seen_) slot = run.counters.at(all_reduce ? "busbw" : "algbw").value;
      medians_seen_ = medians_seen_ || median;
    }
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\n%10s %14s %14s %8s\n", "bytes", "busbw GB/s", "memcpy GB/s", "ratio");
    for (const auto& [bytes, busbw] : busbw_) {
      const auto copy = memcpy_.find(bytes);
      if (copy == memcpy_.end()) continue;
      std::printf("%10lld %14.2f %14.2f %7.0f%%\n", static_cast<long long>(bytes), busbw / 1e9,
                  copy->second / 1e9, 100.0 * busbw / copy->second);
    }
  }

 private:
  std::map<int64_t, double> busbw_;
  std::map<int64_t, double> memcpy_;
  bool medians_seen_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  constexpr std::string_view kFlag = "--plugin=";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.substr(0, kFlag.size()) == kFlag) {
      g_plugin_path = std::string(arg.substr(kFlag.size()));
    } else {
      std::fprintf(stderr, "%s: unknown argument %s\n", argv[0], argv[i]);
      return 1;
    }
  }
  benchmark::AddCustomContext("collectives_plugin", g_plugin_path);
  benchmark::AddCustomContext("replicas", std::to_string(kReplicas));
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
