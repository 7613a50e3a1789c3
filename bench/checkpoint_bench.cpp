// checkpoint_bench: saving and loading checkpoints of seed 003's CNN (samples/mnist_pipeline)
// with its AdamW state, next to the zstd command-line tool on the same bytes, and what an
// asynchronous save adds to a training step.
//
// Setup (once, before any benchmark, not timed): the sample's training program
// (network.h's build_cnn_train: batch 40, AdamW lr 0.001, seed 0) on one device with the
// sample's gradient accumulation 10 and device iterations 10, trained for --train_epochs
// epochs (default 1: 150 AdamW updates) on real MNIST from --data_dir (default "data";
// synthetic MNIST-like data when it is missing), so weights and moments are trained values.
// The session's state is saved through the C API, read back with CheckpointReader: 32
// float32 tensors (8 parameters, their exp_avg and exp_avg_sq, 8 step scalars), 1.08 MB.
// The same bytes, concatenated in manifest order, are the CLI's input.
//
// Benchmarks (wall-clock time; MB = 10^6 bytes of uncompressed tensor data; every figure
// is a counter, so --benchmark_repetitions gives its median):
//   cli_compress/level:L      `zstd -q -f -L -T1 --output-dir-flat DIR` over 16 copies of the
//                             raw bytes in one process, minus the process's fixed cost (the
//                             same command on an empty file); mem_MBps / mem_dMBps: `zstd -b`
//                             (in memory, no file I/O) on one copy
//   cli_compress_durable/level:L  the same, then each output file fsynced and its directory
//                             fsynced, as AtomicFile::commit does for every save
//   cli_decompress/level:L    `zstd -d` of those 16 files, the same way
//   encode/level:L/shuffle:S  encode_tensor over every tensor (crc32, byte shuffle, zstd;
//                             single thread): the compression inside a save, no file
//   save/level:L/shuffle:S    write_checkpoint end to end, 1 compression thread: compression,
//                             manifest, write, fsync, rename, directory fsync
//   decode/level:L/shuffle:S  decode_tensor over every frame in memory
//   load/level:L/shuffle:S    CheckpointReader over save's file (page cache): open, header and
//                             manifest checks, pread, decode, checks
//   session_save/level:L      plx_session_save_checkpoint (snapshot + save), shuffle auto
//   session_load/level:L      plx_session_load_checkpoint of that file
//   zstd_lib/level:L/frames:F libzstd in process, checksum on, unshuffled: one frame of
//                             everything, a frame per tensor with one reused context, or a
//                             frame per tensor with a new context each (as encode_tensor did
//                             before it kept one per thread)
//   file_write/fsync:F        the level-1 file's bytes written and renamed over the target,
//                             with AtomicFile's fsyncs (F 1) or without (F 0, as the CLI)
//   crc32, byte_shuffle, byte_unshuffle  the codec's other passes over all tensor bytes
//   async_save/accumulation:G/save_every:K/runs:R/blis_threads:T  training steps (weight
//                             updates) of the CNN on one device, device iterations 10: R runs
//                             without saving and R runs with plx_session_save_checkpoint_async
//                             (level 3, shuffle auto, 1 io thread) every K steps, alternating
//                             which phase goes first; a saving phase ends when its saves have
//                             completed. T: threads_per_device (0: the default, all cores).
//                             overhead_pct: median over the pairs of saving / plain - 1
//   snapshot_pause            the caller's pause of one asynchronous save right after a run,
//                             next to allocating and copying the same bytes
// Counters: MBps; ratio (uncompressed / compressed); vs_cli (MBps / the CLI's at the same
// level: encode and decode against `zstd -b`, save and load against the CLI's
// file-to-file figures: the median of the cli_* repetitions run so far in this process,
// or a quick measurement when there are none); vs_cli_durable (save against
// cli_compress_durable, when it ran); others_cores (cores other processes kept busy during the timing: machine
// busy time from /proc/stat minus this process's and its children's CPU time) and
// steal_pct (the hypervisor's share of machine time).
//
//   build-h3/bench/checkpoint_bench --benchmark_min_time=0.3 --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true --benchmark_enable_random_interleaving=true
//       --wait_idle=120
// Extra flags: --data_dir=DIR, --checkpoint_dir=DIR (default: a new folder under the
// system's temp directory, removed at exit), --train_epochs=N, --wait_idle=SECONDS (each
// benchmark first waits up to that long for a quiet machine; the wait is not timed).
#include <plexus/plexus.hpp>

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <zstd.h>

#include "core/checkpoint/atomic_file.h"
#include "core/checkpoint/byte_shuffle.h"
#include "core/checkpoint/checkpoint_file.h"
#include "core/checkpoint/crc32.h"
#include "core/checkpoint/tensor_codec.h"
#include "samples/common/mnist_data.h"
#include "samples/mnist_pipeline/network.h"

extern char** environ;

namespace {

namespace ckpt = plexus::checkpoint;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int64_t kBatch = 40;              // the sample's micro-batch
constexpr int64_t kDeviceIterations = 10;   // the sample's weight updates per run
constexpr int64_t kTrainAccumulation = 10;  // the sample's gradient accumulation
constexpr double kLearningRate = 0.001;
constexpr uint64_t kSeed = 0;
constexpr int kCliCopies = 16;         // files per CLI process: amortises its start-up
constexpr int kAsyncLevel = 3;         // plx_checkpoint_options' default
constexpr int64_t kSyntheticPool = 8000;

struct Config {
  std::string data_dir = "data";
  std::string checkpoint_dir;  // empty: a new temp folder
  int64_t train_epochs = 1;
  double wait_idle = 0;  // seconds a benchmark waits for a quiet machine before timing
} g_config;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// CPU time of every thread of this process so far.
double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// ---- machine load during a benchmark ------------------------------------------------

/// Cores that other processes kept busy, and the hypervisor's steal, between start and
/// stop: machine-wide busy jiffies (/proc/stat) minus this process's and its waited-for
/// children's CPU time. With --wait_idle=S, start() first waits up to S seconds for a
/// half-second in which other processes kept < 0.2 cores busy.
class LoadMeter {
 public:
  void start() {
    const auto w0 = Clock::now();
    while (seconds_since(w0) < g_config.wait_idle) {
      begin();
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      if (others_cores() < 0.2) break;
    }
    waited_ = seconds_since(w0);
    begin();
  }
  void stop(benchmark::State& state) const {
    state.counters["others_cores"] = std::max(0.0, others_cores());
    uint64_t busy = 0, steal = 0, total = 0;
    read_stat(busy, steal, total);
    state.counters["steal_pct"] =
        total > total0_ ? 100.0 * static_cast<double>(steal - steal0_) / static_cast<double>(total - total0_) : 0.0;
    if (g_config.wait_idle > 0) state.counters["waited_s"] = waited_;
  }

 private:
  void begin() {
    t0_ = Clock::now();
    read_stat(busy0_, steal0_, total0_);
    own0_ = own_cpu_seconds();
  }
  double others_cores() const {
    uint64_t busy = 0, steal = 0, total = 0;
    read_stat(busy, steal, total);
    const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
    return (static_cast<double>(busy - busy0_) / hz - (own_cpu_seconds() - own0_)) / seconds_since(t0_);
  }
  static void read_stat(uint64_t& busy, uint64_t& steal, uint64_t& total) {
    std::ifstream in("/proc/stat");
    std::string cpu;
    uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
    in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
    busy = user + nice + system + irq + softirq;
    total = busy + idle + iowait + steal;
  }
  static double own_cpu_seconds() {
    double s = 0;
    for (const int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
      rusage u{};
      getrusage(who, &u);
      s += static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
    }
    return s;
  }
  Clock::time_point t0_;
  uint64_t busy0_ = 0, steal0_ = 0, total0_ = 0;
  double own0_ = 0, waited_ = 0;
};

// Runs `body` once per benchmark iteration under a LoadMeter (which first waits for the
// machine to be idle) and returns the seconds spent in it. A body that calls
// state.SkipWithError ends the loop.
template <class Body>
double timed_loop(benchmark::State& state, Body&& body) {
  double seconds = 0;
  LoadMeter load;
  load.start();
  for (auto _ : state) {
    const auto t0 = Clock::now();
    body();
    seconds += seconds_since(t0);
  }
  load.stop(state);
  return seconds;
}

// ---- training data and the CNN session ----------------------------------------------

/// Real MNIST (shuffled with the sample's seed) or, without it, a pool of synthetic
/// MNIST-like samples (80 % background pixels, the rest uniform 1..255; labels uniform).
class TrainingData {
 public:
  explicit TrainingData(const std::string& data_dir) {
    const std::string folder = samples::dataset_folder(data_dir, "mnist");
    if (fs::exists(samples::idx_path(folder, "train-images-idx3-ubyte"))) {
      mnist_.emplace(folder, true);
      mnist_->shuffle(kSeed);  // the sample's first epoch
      source_ = "MNIST (" + folder + ")";
      return;
    }
    source_ = "synthetic MNIST-like (no MNIST in " + folder + ")";
    images_.resize(static_cast<size_t>(kSyntheticPool * samples::kPixels));
    labels_.resize(static_cast<size_t>(kSyntheticPool));
    std::mt19937_64 rng(kSeed);
    std::bernoulli_distribution ink(0.2);
    std::uniform_int_distribution<int> level(1, 255), label(0, 9);
    constexpr float scale = 1.0f / (255.0f * samples::kMnistStd), shift = -samples::kMnistMean / samples::kMnistStd;
    for (float& x : images_) x = static_cast<float>(ink(rng) ? level(rng) : 0) * scale + shift;
    for (int32_t& y : labels_) y = label(rng);
  }

  int64_t size() const { return mnist_ ? mnist_->size() : 60000; }
  const std::string& source() const { return source_; }

  void fill(int64_t first, int64_t count, float* images, int32_t* labels) const {
    if (mnist_) {
      mnist_->fill(first, count, images, labels);
      return;
    }
    for (int64_t i = 0; i < count; ++i) {
      const int64_t s = (first + i) % kSyntheticPool;
      std::memcpy(images + i * samples::kPixels, images_.data() + s * samples::kPixels, samples::kPixels * sizeof(float));
      labels[i] = labels_[static_cast<size_t>(s)];
    }
  }

 private:
  std::optional<samples::ImageSplit> mnist_;
  std::vector<float> images_;
  std::vector<int32_t> labels_;
  std::string source_;
};

/// The sample's training program on one device (all four blocks on device 0), with
/// `pool_runs` runs of data preloaded and read in place.
struct CnnSession {
  samples::CnnTrainProgram program;
  plx::Stages stages;
  plx::Session session;
  int64_t per_run;
  std::vector<float> images, loss;
  std::vector<int32_t> labels, correct;
  plx::Shape image_shape, label_shape, out_shape;
  int64_t pool_runs;

  static plx::SessionOptions options(plx::Stages& stages, int64_t accumulation, int32_t blis_threads) {
    stages.add({"B1", "B2", "B3", "B4"}, 0);
    plx::SessionOptions o;
    stages.apply(o);
    o.device_iterations = kDeviceIterations;
    o.gradient_accumulation = accumulation;
    o.threads_per_device = blis_threads;
    return o;
  }

  /// blis_threads: threads_per_device (0: the default, cores / devices).
  CnnSession(int64_t accumulation, const TrainingData& data, int64_t pool, int32_t blis_threads = 0)
      : program(samples::build_cnn_train({kBatch, 1, kSeed, kLearningRate})),
        session(program.ir, options(stages, accumulation, blis_threads)),
        per_run(kBatch * accumulation * kDeviceIterations),
        images(static_cast<size_t>(pool * per_run * samples::kPixels)),
        loss(static_cast<size_t>(accumulation * kDeviceIterations)),
        labels(static_cast<size_t>(pool * per_run)),
        correct(loss.size()),
        image_shape(session.host_shape(program.images)),
        label_shape(session.host_shape(program.labels)),
        out_shape(session.host_shape(program.loss)),
        pool_runs(pool) {
    if (pool > 0) data.fill(0, pool * per_run, images.data(), labels.data());
  }

  /// Run `run` on the preloaded pool (run % pool_runs).
  void run_pool(int64_t run) {
    const int64_t first = (run % pool_runs) * per_run;
    run_on(images.data() + first * samples::kPixels, labels.data() + first);
  }

  void run_on(const float* x, const int32_t* y) {
    session.run({plx::HostArray(program.images, x, image_shape), plx::HostArray(program.labels, y, label_shape)},
                {plx::HostArray(program.loss, loss.data(), out_shape),
                 plx::HostArray(program.correct, correct.data(), out_shape)});
  }

  double mean_loss() const {
    double s = 0;
    for (float l : loss) s += l;
    return s / static_cast<double>(loss.size());
  }
};

plx_checkpoint_options checkpoint_options(int level, plx_shuffle shuffle) {
  plx_checkpoint_options o{};
  plx_checkpoint_options_init(&o);
  o.level = level;
  o.threads = 1;
  o.shuffle = shuffle;
  return o;
}

// ---- the fixture: trained state, its bytes, the CLI's input files -------------------

struct Fixture {
  fs::path dir;
  bool remove_dir = false;
  std::string data_source;
  int64_t updates = 0;
  double first_loss = 0, last_loss = 0, train_seconds = 0;
  std::optional<TrainingData> data;
  std::optional<CnnSession> trained;  // the training session, holding the trained state
  fs::path trained_path;              // its state, saved through the C API (level 3, auto)
  ckpt::Manifest manifest;            // as read back from trained_path
  std::vector<std::vector<std::byte>> tensors;
  std::vector<std::span<const std::byte>> spans;
  uint64_t bytes = 0;
  std::vector<std::string> cli_inputs;  // kCliCopies copies of the raw bytes
  fs::path cli_empty;

  /// The manifest with every tensor's shuffle flag set to `shuffle`.
  ckpt::Manifest manifest_with(bool shuffle) const {
    ckpt::Manifest m = manifest;
    for (ckpt::TensorEntry& e : m.tensors) {
      e.shuffle = shuffle;
      e.offset = e.size = 0;
      e.crc32 = 0;
    }
    return m;
  }
  fs::path file(const std::string& name) const { return dir / name; }
};

Fixture* g_fixture = nullptr;
const Fixture& fixture() { return *g_fixture; }

void build_fixture(Fixture& f) {
  if (g_config.checkpoint_dir.empty()) {
    f.dir = fs::temp_directory_path() / ("plexus_checkpoint_bench." + std::to_string(::getpid()));
    f.remove_dir = true;
  } else {
    f.dir = g_config.checkpoint_dir;
  }
  fs::create_directories(f.dir / "cli" / "in");
  f.data.emplace(g_config.data_dir);
  f.data_source = f.data->source();
  f.trained.emplace(kTrainAccumulation, *f.data, 0);
  CnnSession& s = *f.trained;

  // The sample's first epochs: runs of 10 updates x 10 micro-batches x 40 samples.
  const int64_t runs = f.data->size() / s.per_run;
  std::vector<float> x(static_cast<size_t>(s.per_run * samples::kPixels));
  std::vector<int32_t> y(static_cast<size_t>(s.per_run));
  std::fprintf(stderr, "checkpoint_bench: training seed 003's CNN, %lld epoch(s) of %lld runs (%lld AdamW updates each) on %s\n",
               static_cast<long long>(g_config.train_epochs), static_cast<long long>(runs),
               static_cast<long long>(kDeviceIterations), f.data_source.c_str());
  const auto t0 = Clock::now();
  for (int64_t epoch = 0; epoch < g_config.train_epochs; ++epoch) {
    for (int64_t run = 0; run < runs; ++run) {
      f.data->fill(run * s.per_run, s.per_run, x.data(), y.data());
      s.run_on(x.data(), y.data());
      if (epoch == 0 && run == 0) f.first_loss = s.mean_loss();
      f.updates += kDeviceIterations;
    }
  }
  f.train_seconds = seconds_since(t0);
  f.last_loss = s.mean_loss();
  std::fprintf(stderr, "checkpoint_bench: %lld updates in %.1f s, mean loss %.4f (first run) -> %.4f (last run)\n",
               static_cast<long long>(f.updates), f.train_seconds, f.first_loss, f.last_loss);

  f.trained_path = f.file("trained.ckpt");
  const plx_checkpoint_options o = checkpoint_options(3, PLX_SHUFFLE_AUTO);
  plx::check(plx_session_save_checkpoint(s.session.get(), f.trained_path.c_str(), &o));
  const ckpt::CheckpointReader reader(f.trained_path.string());
  f.manifest = reader.manifest();
  for (const ckpt::TensorEntry& e : f.manifest.tensors) {
    f.tensors.push_back(reader.read(e));
    f.bytes += f.tensors.back().size();
  }
  f.spans.assign(f.tensors.begin(), f.tensors.end());

  std::vector<std::byte> raw;
  raw.reserve(f.bytes);
  for (const auto& t : f.tensors) raw.insert(raw.end(), t.begin(), t.end());
  for (int k = 0; k < kCliCopies; ++k) {
    char name[32];
    std::snprintf(name, sizeof name, "raw_%02d.bin", k);
    const fs::path p = f.dir / "cli" / "in" / name;
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(raw.data()), static_cast<std::streamsize>(raw.size()));
    f.cli_inputs.push_back(p.string());
  }
  f.cli_empty = f.dir / "cli" / "empty.bin";
  std::ofstream(f.cli_empty, std::ios::binary).flush();
}

// ---- the zstd command-line tool -----------------------------------------------------

/// The zstd executable on the PATH, or empty.
const std::string& zstd_cli() {
  static const std::string path = [] {
    const char* env = std::getenv("PATH");
    std::string dirs = env ? env : "/usr/bin:/bin";
    for (size_t begin = 0; begin <= dirs.size();) {
      const size_t end = std::min(dirs.find(':', begin), dirs.size());
      const fs::path candidate = fs::path(dirs.substr(begin, end - begin)) / "zstd";
      if (end > begin && ::access(candidate.c_str(), X_OK) == 0) return candidate.string();
      begin = end + 1;
    }
    return std::string();
  }();
  return path;
}

/// Runs argv (argv[0] = the program) without a shell; true when it exits with 0.
bool run_process(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return false;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return false;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string run_capture(const std::string& command) {
  std::string out;
  if (FILE* p = popen(command.c_str(), "r")) {
    char buf[512];
    while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    pclose(p);
  }
  return out;
}

/// Median wall time of `args` run `n` times (the process's fixed cost on an empty file).
double median_run_seconds(const std::vector<std::string>& args, int n) {
  std::vector<double> t;
  for (int i = 0; i < n; ++i) {
    const auto t0 = Clock::now();
    run_process(args);
    t.push_back(seconds_since(t0));
  }
  return median(t);
}

std::vector<std::string> cli_compress_args(int level, const fs::path& out_dir, const std::vector<std::string>& inputs) {
  std::vector<std::string> a{zstd_cli(), "-q", "-f", "-" + std::to_string(level), "-T1", "--output-dir-flat", out_dir.string()};
  a.insert(a.end(), inputs.begin(), inputs.end());
  return a;
}

std::vector<std::string> cli_decompress_args(const fs::path& out_dir, const std::vector<std::string>& inputs) {
  std::vector<std::string> a{zstd_cli(), "-d", "-q", "-f", "--output-dir-flat", out_dir.string()};
  a.insert(a.end(), inputs.begin(), inputs.end());
  return a;
}

fs::path cli_dir(const char* what, int level) { return fixture().dir / "cli" / (std::string(what) + "_" + std::to_string(level)); }

std::vector<std::string> cli_frames(int level) {
  std::vector<std::string> out;
  for (const std::string& in : fixture().cli_inputs) out.push_back((cli_dir("z", level) / (fs::path(in).filename().string() + ".zst")).string());
  return out;
}

/// The CLI's figures at one level, per repetition of the cli_* benchmarks.
struct CliFigures {
  std::vector<double> compress, decompress;          // file to file, MB/s
  std::vector<double> compress_durable;              // file to file, then fsynced as a save is
  std::vector<double> mem_compress, mem_decompress;  // zstd -b, MB/s
};
std::map<int, CliFigures> g_cli;

/// `zstd -q -b<level> -i1 -T1 file`: compression and decompression MB/s in memory.
bool cli_bench(int level, double& c, double& d, double& ratio) {
  const std::string out = run_capture(zstd_cli() + " -q -b" + std::to_string(level) + " -i1 -T1 " + fixture().cli_inputs[0] + " 2>&1");
  // "-1       987760 (1.082) 170.33 MB/s  439.3 MB/s  raw_00.bin"
  const size_t at = out.find_last_of('-');
  unsigned long long size = 0;
  return at != std::string::npos &&
         std::sscanf(out.c_str() + at, "-%*d %llu (%lf) %lf MB/s %lf MB/s", &size, &ratio, &c, &d) == 4;
}

/// The median of this run's CLI figures at `level`, measured now (a few runs) when the
/// cli_* benchmarks were filtered out.
const CliFigures& cli_reference(int level) {
  CliFigures& f = g_cli[level];
  if (!zstd_cli().empty() && (f.compress.empty() || f.mem_compress.empty())) {
    const std::vector<std::string> inputs = fixture().cli_inputs;
    fs::create_directories(cli_dir("z", level));
    fs::create_directories(cli_dir("d", level));
    const double c0 = median_run_seconds(cli_compress_args(level, cli_dir("z", level), {fixture().cli_empty.string()}), 5);
    const double c = median_run_seconds(cli_compress_args(level, cli_dir("z", level), inputs), 3);
    const std::string empty_frame = (cli_dir("z", level) / "empty.bin.zst").string();  // written by the c0 runs
    const double d0 = median_run_seconds(cli_decompress_args(cli_dir("d", level), {empty_frame}), 5);
    const double d = median_run_seconds(cli_decompress_args(cli_dir("d", level), cli_frames(level)), 3);
    const double mb = static_cast<double>(fixture().bytes) * kCliCopies / 1e6;
    f.compress.push_back(mb / std::max(c - c0, 1e-9));
    f.decompress.push_back(mb / std::max(d - d0, 1e-9));
    double mc = 0, md = 0, ratio = 0;
    if (cli_bench(level, mc, md, ratio)) {
      f.mem_compress.push_back(mc);
      f.mem_decompress.push_back(md);
    }
  }
  return f;
}

void set_vs_cli(benchmark::State& state, double mbps, const std::vector<double>& cli, const char* counter = "vs_cli") {
  if (!cli.empty() && median(cli) > 0) state.counters[counter] = mbps / median(cli);
}

// What AtomicFile::commit adds to a file the CLI wrote: an fsync of the file and one of its
// directory, per file (a save of one checkpoint each). False when a file cannot be synced.
bool fsync_like_a_save(const std::vector<std::string>& files) {
  for (const std::string& file : files) {
    for (const std::string& path : {file, fs::path(file).parent_path().string()}) {
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return false;
      const int rc = ::fsync(fd);
      ::close(fd);
      if (rc != 0) return false;
    }
  }
  return true;
}

// Runs the zstd CLI with `args` once per benchmark iteration and reports the counters
// every CLI benchmark shares: MB/s of the fixture's bytes with the process start-up
// (the median time of `startup_args`, the same command on an empty file) taken out, the
// same with it, and the start-up itself. Returns that MB/s, or a negative value after
// SkipWithError(`failure`) when zstd fails.
double time_cli(benchmark::State& state, const std::vector<std::string>& args, const std::vector<std::string>& startup_args,
                const char* failure, const std::function<bool()>& then = [] { return true; }) {
  const double startup = median_run_seconds(startup_args, 9);
  bool failed = false;
  const double seconds = timed_loop(state, [&] {
    if (!failed && (!run_process(args) || !then())) {
      state.SkipWithError(failure);
      failed = true;
    }
  });
  if (failed) return -1;
  const double per_run = seconds / static_cast<double>(state.iterations());
  const double mb = static_cast<double>(fixture().bytes) * kCliCopies / 1e6;
  const double mbps = mb / std::max(per_run - startup, 1e-9);
  state.counters["MBps"] = mbps;
  state.counters["MBps_with_startup"] = mb / per_run;
  state.counters["startup_ms"] = startup * 1e3;
  return mbps;
}

// time_cli over `zstd -<level>` of the 16 copies into cli_dir("z", level), each run followed
// by `then` (timed too).
double time_cli_compress(benchmark::State& state, int level, const char* failure,
                         const std::function<bool()>& then = [] { return true; }) {
  if (zstd_cli().empty()) {
    state.SkipWithError("zstd CLI not found");
    return -1;
  }
  const Fixture& f = fixture();
  const fs::path out = cli_dir("z", level);
  fs::create_directories(out);
  return time_cli(state, cli_compress_args(level, out, f.cli_inputs), cli_compress_args(level, out, {f.cli_empty.string()}),
                  failure, then);
}

void BM_CliCompress(benchmark::State& state, int level) {
  const double mbps = time_cli_compress(state, level, "zstd failed");
  if (mbps < 0) return;
  const Fixture& f = fixture();
  state.counters["ratio"] = static_cast<double>(f.bytes) / static_cast<double>(fs::file_size(cli_frames(level)[0]));
  CliFigures& figures = g_cli[level];
  figures.compress.push_back(mbps);
  double mc = 0, md = 0, ratio = 0;
  if (cli_bench(level, mc, md, ratio)) {  // after the timing: `zstd -b` runs for ~2 s
    figures.mem_compress.push_back(mc);
    figures.mem_decompress.push_back(md);
    state.counters["mem_MBps"] = mc;
    state.counters["mem_dMBps"] = md;
  }
}

// The CLI's compression followed by AtomicFile's two fsyncs per output file: the durable
// peer of `save`.
void BM_CliCompressDurable(benchmark::State& state, int level) {
  const std::vector<std::string> frames = cli_frames(level);
  const double mbps = time_cli_compress(state, level, "zstd or fsync failed", [&] { return fsync_like_a_save(frames); });
  if (mbps >= 0) g_cli[level].compress_durable.push_back(mbps);
}

void BM_CliDecompress(benchmark::State& state, int level) {
  if (zstd_cli().empty()) {
    state.SkipWithError("zstd CLI not found");
    return;
  }
  const Fixture& f = fixture();
  const std::vector<std::string> frames = cli_frames(level);
  if (!fs::exists(frames.back())) {
    fs::create_directories(cli_dir("z", level));
    run_process(cli_compress_args(level, cli_dir("z", level), f.cli_inputs));
  }
  const fs::path out = cli_dir("d", level);
  fs::create_directories(out);
  const fs::path empty_frame = cli_dir("z", level) / "empty.bin.zst";
  run_process(cli_compress_args(level, cli_dir("z", level), {f.cli_empty.string()}));
  const double mbps = time_cli(state, cli_decompress_args(out, frames), cli_decompress_args(out, {empty_frame.string()}),
                               "zstd -d failed");
  if (mbps < 0) return;
  g_cli[level].decompress.push_back(mbps);
}

// ---- Plexus: the codec, the file, the session ---------------------------------------

/// MBps of `iterations` passes over the fixture's bytes in `seconds`.
double mbps_of(const benchmark::State& state, double seconds) {
  return static_cast<double>(fixture().bytes) * static_cast<double>(state.iterations()) / 1e6 / seconds;
}

void BM_Encode(benchmark::State& state, int level, bool shuffle) {
  const Fixture& f = fixture();
  ckpt::Manifest m = f.manifest_with(shuffle);
  uint64_t compressed = 0;
  std::vector<std::byte> frame;  // reused, as write_checkpoint does
  const double seconds = timed_loop(state, [&] {
    compressed = 0;
    for (size_t i = 0; i < m.tensors.size(); ++i) {
      ckpt::encode_tensor(m.tensors[i], f.spans[i], level, frame);
      compressed += frame.size();
      benchmark::DoNotOptimize(frame.data());
    }
  });
  const double mbps = mbps_of(state, seconds);
  state.counters["MBps"] = mbps;
  state.counters["ratio"] = static_cast<double>(f.bytes) / static_cast<double>(compressed);
  set_vs_cli(state, mbps, cli_reference(level).mem_compress);
}

fs::path saved_file(int level, bool shuffle) {
  return fixture().file("save_" + std::to_string(level) + (shuffle ? "_shuffled" : "_plain") + ".ckpt");
}

void BM_Save(benchmark::State& state, int level, bool shuffle) {
  const Fixture& f = fixture();
  const ckpt::Manifest m = f.manifest_with(shuffle);
  const std::string path = saved_file(level, shuffle).string();
  ckpt::WriteStats stats;
  const double seconds = timed_loop(state, [&] {
    stats = ckpt::write_checkpoint(path, m, f.spans, ckpt::WriteOptions{level, 1});
  });
  const double mbps = mbps_of(state, seconds);
  state.counters["MBps"] = mbps;
  state.counters["ratio"] = static_cast<double>(stats.uncompressed_bytes) / static_cast<double>(stats.file_bytes);
  set_vs_cli(state, mbps, cli_reference(level).compress);
  set_vs_cli(state, mbps, cli_reference(level).compress_durable, "vs_cli_durable");
}

void BM_Decode(benchmark::State& state, int level, bool shuffle) {
  const Fixture& f = fixture();
  ckpt::Manifest m = f.manifest_with(shuffle);
  std::vector<std::vector<std::byte>> frames, out;
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    ckpt::encode_tensor(m.tensors[i], f.spans[i], level, frames.emplace_back());
    out.emplace_back(f.tensors[i].size());
  }
  const double seconds = timed_loop(state, [&] {
    for (size_t i = 0; i < frames.size(); ++i) ckpt::decode_tensor(m.tensors[i], frames[i], out[i], "bench");
    benchmark::DoNotOptimize(out.data());
  });
  const double mbps = mbps_of(state, seconds);
  state.counters["MBps"] = mbps;
  set_vs_cli(state, mbps, cli_reference(level).mem_decompress);
}

void BM_Load(benchmark::State& state, int level, bool shuffle) {
  const Fixture& f = fixture();
  const std::string path = saved_file(level, shuffle).string();
  if (!fs::exists(path)) ckpt::write_checkpoint(path, f.manifest_with(shuffle), f.spans, ckpt::WriteOptions{level, 1});
  const double seconds = timed_loop(state, [&] {
    const ckpt::CheckpointReader reader(path);
    for (const ckpt::TensorEntry& e : reader.manifest().tensors) {
      const std::vector<std::byte> data = reader.read(e);
      benchmark::DoNotOptimize(data.data());
    }
  });
  const double mbps = mbps_of(state, seconds);
  state.counters["MBps"] = mbps;
  set_vs_cli(state, mbps, cli_reference(level).decompress);
}

fs::path session_file(int level) { return fixture().file("session_" + std::to_string(level) + ".ckpt"); }

void BM_SessionSave(benchmark::State& state, int level) {
  const Fixture& f = fixture();
  const plx_checkpoint_options o = checkpoint_options(level, PLX_SHUFFLE_AUTO);
  const std::string path = session_file(level).string();
  const double seconds = timed_loop(state, [&] {
    plx::check(plx_session_save_checkpoint(f.trained->session.get(), path.c_str(), &o));
  });
  state.counters["MBps"] = mbps_of(state, seconds);
  state.counters["ratio"] = static_cast<double>(f.bytes) / static_cast<double>(fs::file_size(path));
}

void BM_SessionLoad(benchmark::State& state, int level) {
  const Fixture& f = fixture();
  const std::string path = session_file(level).string();
  if (!fs::exists(path)) {
    const plx_checkpoint_options o = checkpoint_options(level, PLX_SHUFFLE_AUTO);
    plx::check(plx_session_save_checkpoint(f.trained->session.get(), path.c_str(), &o));
  }
  const plx_checkpoint_options o = checkpoint_options(level, PLX_SHUFFLE_AUTO);
  const double seconds = timed_loop(state, [&] {
    plx::check(plx_session_load_checkpoint(f.trained->session.get(), path.c_str(), &o));
  });
  state.counters["MBps"] = mbps_of(state, seconds);
}

/// The file part of a save alone: the level-1 shuffled checkpoint's bytes written to a
/// new file and renamed over the target, with (AtomicFile: fsync of the file and of the
/// directory) or without the fsyncs (what the CLI does: it never fsyncs).
void BM_FileWrite(benchmark::State& state, bool fsync) {
  const Fixture& f = fixture();
  const fs::path source = saved_file(1, true);
  if (!fs::exists(source)) ckpt::write_checkpoint(source.string(), f.manifest_with(true), f.spans, ckpt::WriteOptions{1, 1});
  std::vector<char> bytes(fs::file_size(source));
  std::ifstream(source, std::ios::binary).read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  const std::string path = f.file(fsync ? "write_fsync.ckpt" : "write_nofsync.ckpt").string();
  const std::string temp = path + ".tmp";
  const double seconds = timed_loop(state, [&] {
    if (fsync) {
      ckpt::AtomicFile file(path);
      file.write_at(0, bytes.data(), bytes.size());
      file.commit();
    } else {
      std::FILE* out = std::fopen(temp.c_str(), "wb");
      if (out == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), out) != bytes.size() || std::fclose(out) != 0) {
        state.SkipWithError("cannot write");
        return;
      }
      fs::rename(temp, path);
    }
  });
  state.counters["ms"] = 1e3 * seconds / static_cast<double>(state.iterations());
  state.counters["file_bytes"] = static_cast<double>(bytes.size());
}

// ---- where the codec's time goes ----------------------------------------------------

struct FreeCCtx {
  void operator()(ZSTD_CCtx* c) const noexcept { ZSTD_freeCCtx(c); }
};

std::unique_ptr<ZSTD_CCtx, FreeCCtx> new_context(int level) {
  std::unique_ptr<ZSTD_CCtx, FreeCCtx> ctx(ZSTD_createCCtx());
  ZSTD_CCtx_setParameter(ctx.get(), ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(ctx.get(), ZSTD_c_checksumFlag, 1);
  ZSTD_CCtx_setParameter(ctx.get(), ZSTD_c_contentSizeFlag, 1);
  return ctx;
}

/// libzstd alone, unshuffled: frames 0 = one frame of all tensors, 1 = a frame per tensor
/// with one reused context, 2 = a frame per tensor with a new context each (encode_tensor's way before it kept one
/// per thread).
void BM_ZstdLib(benchmark::State& state, int level, int frames) {
  const Fixture& f = fixture();
  std::vector<std::byte> whole;
  for (const auto& t : f.tensors) whole.insert(whole.end(), t.begin(), t.end());
  std::vector<std::span<const std::byte>> inputs = frames ? f.spans : std::vector<std::span<const std::byte>>{whole};
  std::vector<std::byte> out(ZSTD_compressBound(whole.size()));
  std::unique_ptr<ZSTD_CCtx, FreeCCtx> ctx = new_context(level);
  uint64_t compressed = 0;
  const double seconds = timed_loop(state, [&] {
    compressed = 0;
    for (const auto& in : inputs) {
      if (frames == 2) ctx = new_context(level);
      const size_t n = ZSTD_compress2(ctx.get(), out.data(), out.size(), in.data(), in.size());
      if (ZSTD_isError(n)) {
        state.SkipWithError(ZSTD_getErrorName(n));
        return;
      }
      compressed += n;
    }
    benchmark::DoNotOptimize(out.data());
  });
  state.counters["MBps"] = mbps_of(state, seconds);
  state.counters["ratio"] = static_cast<double>(f.bytes) / static_cast<double>(compressed);
}

/// A pass of the codec other than zstd over every tensor: 0 crc32, 1 shuffle, 2 unshuffle.
void BM_CodecPass(benchmark::State& state, int pass) {
  const Fixture& f = fixture();
  std::vector<std::vector<std::byte>> out;
  for (const auto& t : f.tensors) out.emplace_back(t.size());
  uint32_t crc = 0;
  const double seconds = timed_loop(state, [&] {
    for (size_t i = 0; i < f.tensors.size(); ++i) {
      const size_t e = plexus::ir::dtype_size(f.manifest.tensors[i].dtype);
      if (pass == 0) crc ^= ckpt::crc32_of(f.spans[i]);
      if (pass == 1) ckpt::byte_shuffle(f.tensors[i].data(), out[i].data(), f.tensors[i].size(), e);
      if (pass == 2) ckpt::byte_unshuffle(f.tensors[i].data(), out[i].data(), f.tensors[i].size(), e);
    }
    benchmark::DoNotOptimize(crc);
    benchmark::DoNotOptimize(out.data());
  });
  state.counters["MBps"] = mbps_of(state, seconds);
}

// ---- asynchronous saves during training ---------------------------------------------

void BM_AsyncSave(benchmark::State& state, int64_t accumulation, int64_t every, int64_t runs, int32_t blis_threads) {
  const Fixture& f = fixture();
  CnnSession s(accumulation, *f.data, 2, blis_threads);
  const plx_checkpoint_options load_options = checkpoint_options(kAsyncLevel, PLX_SHUFFLE_AUTO);
  plx::check(plx_session_load_checkpoint(s.session.get(), f.trained_path.c_str(), &load_options));
  const plx_checkpoint_options o = checkpoint_options(kAsyncLevel, PLX_SHUFFLE_AUTO);
  const std::string path = f.file("async_" + std::to_string(accumulation) + ".ckpt").string();
  int64_t run = 0;
  for (int i = 0; i < 3; ++i) s.run_pool(run++);  // warm-up
  // The first asynchronous save creates the session's saver (its io thread): not timed.
  plx_run* first = nullptr;
  plx::check(plx_session_save_checkpoint_async(s.session.get(), path.c_str(), &o, &first));
  plx::check(plx_run_wait(first, -1));
  plx_run_destroy(first);

  double plain = 0, saving = 0, snapshot = 0, cpu_plain = 0, cpu_saving = 0;
  int64_t saves = 0, iteration = 0;
  std::vector<double> pair_ratios;  // per iteration: saving phase / plain phase
  LoadMeter load;
  load.start();
  for (auto _ : state) {
    double phase_seconds[2] = {0, 0};
    for (int phase = 0; phase < 2; ++phase) {
      const bool save = (phase == 0) == (iteration % 2 == 0);
      std::vector<plx_run*> pending;
      const double cpu0 = process_cpu_seconds();
      const auto t0 = Clock::now();
      for (int64_t r = 0; r < runs; ++r) {
        if (save && (r * kDeviceIterations) % every == 0) {
          const auto ts = Clock::now();
          plx_run* h = nullptr;
          plx::check(plx_session_save_checkpoint_async(s.session.get(), path.c_str(), &o, &h));
          snapshot += seconds_since(ts);
          pending.push_back(h);
          ++saves;
        }
        s.run_pool(run++);
      }
      for (plx_run* h : pending) {
        const plx_status status = plx_run_wait(h, -1);
        plx_run_destroy(h);
        plx::check(status);
      }
      phase_seconds[save ? 1 : 0] = seconds_since(t0);
      (save ? cpu_saving : cpu_plain) += process_cpu_seconds() - cpu0;
    }
    plain += phase_seconds[0];
    saving += phase_seconds[1];
    pair_ratios.push_back(phase_seconds[1] / phase_seconds[0]);
    ++iteration;
  }
  load.stop(state);
  const double steps = static_cast<double>(state.iterations() * runs * kDeviceIterations);
  state.counters["step_ms_plain"] = 1e3 * plain / steps;
  state.counters["step_ms_saving"] = 1e3 * saving / steps;
  state.counters["overhead_pct"] = 100.0 * (median(pair_ratios) - 1.0);  // median over the pairs
  state.counters["overhead_pct_total"] = 100.0 * (saving / plain - 1.0);
  state.counters["snapshot_ms"] = saves ? 1e3 * snapshot / static_cast<double>(saves) : 0.0;
  // CPU time (all of this process's threads) a save added: what it takes from the steps
  // when no core is idle.
  state.counters["save_cpu_ms"] = saves ? 1e3 * (cpu_saving - cpu_plain) / static_cast<double>(saves) : 0.0;
  state.counters["saves_per_phase"] = static_cast<double>(saves) / static_cast<double>(state.iterations());
  if (!(s.mean_loss() == s.mean_loss())) state.SkipWithError("loss is NaN");
}

/// The caller's pause of an asynchronous save (the snapshot: state copied to host memory
/// between runs), taken right after a run returns as in a training loop, next to its floor:
/// allocating and copying the same bytes on the host.
void BM_SnapshotPause(benchmark::State& state) {
  const Fixture& f = fixture();
  CnnSession s(1, *f.data, 1);
  const plx_checkpoint_options o = checkpoint_options(kAsyncLevel, PLX_SHUFFLE_AUTO);
  const std::string path = f.file("snapshot.ckpt").string();
  for (int i = 0; i < 3; ++i) s.run_pool(0);
  std::vector<double> pause, floor;
  LoadMeter load;
  load.start();
  for (auto _ : state) {
    s.run_pool(0);
    const auto t0 = Clock::now();
    plx_run* h = nullptr;
    plx::check(plx_session_save_checkpoint_async(s.session.get(), path.c_str(), &o, &h));
    pause.push_back(seconds_since(t0));
    const plx_status status = plx_run_wait(h, -1);
    plx_run_destroy(h);
    plx::check(status);
    const auto t1 = Clock::now();
    std::vector<std::vector<std::byte>> copy;
    for (const auto& t : f.tensors) copy.emplace_back(t.begin(), t.end());
    floor.push_back(seconds_since(t1));
    benchmark::DoNotOptimize(copy.data());
  }
  load.stop(state);
  state.counters["pause_ms"] = 1e3 * median(pause);
  state.counters["copy_floor_ms"] = 1e3 * median(floor);
}

// ---- registration and main ----------------------------------------------------------

void register_benchmarks() {
  auto reg = [](const std::string& name, auto fn, auto... args) {
    return benchmark::RegisterBenchmark(name.c_str(), fn, args...)->UseRealTime()->Unit(benchmark::kMillisecond);
  };
  for (const int level : {1, 3, 9}) {
    const std::string l = "/level:" + std::to_string(level);
    reg("cli_compress" + l, BM_CliCompress, level);
    reg("cli_compress_durable" + l, BM_CliCompressDurable, level);
    reg("cli_decompress" + l, BM_CliDecompress, level);
    for (const bool shuffle : {false, true}) {
      const std::string s = l + "/shuffle:" + std::to_string(shuffle ? 1 : 0);
      reg("encode" + s, BM_Encode, level, shuffle);
      reg("save" + s, BM_Save, level, shuffle);
      reg("decode" + s, BM_Decode, level, shuffle);
      reg("load" + s, BM_Load, level, shuffle);
    }
    reg("session_save" + l, BM_SessionSave, level);
    reg("session_load" + l, BM_SessionLoad, level);
    const char* frames[] = {"one", "per_tensor", "per_tensor_new_context"};
    for (int k = 0; k < 3; ++k) reg("zstd_lib" + l + "/frames:" + frames[k], BM_ZstdLib, level, k);
  }
  for (const bool fsync : {false, true}) reg(std::string("file_write/fsync:") + (fsync ? "1" : "0"), BM_FileWrite, fsync);
  const char* passes[] = {"crc32", "byte_shuffle", "byte_unshuffle"};
  for (int p = 0; p < 3; ++p) reg(passes[p], BM_CodecPass, p)->Unit(benchmark::kMicrosecond);
  reg("snapshot_pause", BM_SnapshotPause)->Iterations(25);
  // Each iteration is one pair of phases (plain, saving); fixed counts (a repetition takes
  // 8 to 25 s) whatever --benchmark_min_time says.
  struct Async {
    int64_t accumulation, every, runs;
    int32_t blis_threads;
    int64_t pairs;
  };
  for (const Async& a : {Async{1, 10, 5, 0, 8}, Async{1, 10, 5, 1, 8}, Async{1, 100, 10, 0, 12}, Async{10, 10, 2, 0, 4}}) {
    reg("async_save/accumulation:" + std::to_string(a.accumulation) + "/save_every:" + std::to_string(a.every) +
            "/runs:" + std::to_string(a.runs) + "/blis_threads:" + std::to_string(a.blis_threads),
        BM_AsyncSave, a.accumulation, a.every, a.runs, a.blis_threads)
        ->Iterations(a.pairs);
  }
}

/// Strips --data_dir=, --checkpoint_dir=, --train_epochs=, --wait_idle= from argv; false on
/// a bad value.
bool parse_flags(int& argc, char** argv) {
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) -> std::optional<std::string> {
      const std::string prefix = std::string(flag) + "=";
      if (a.rfind(prefix, 0) == 0) return a.substr(prefix.size());
      return std::nullopt;
    };
    if (auto v = value("--data_dir")) {
      g_config.data_dir = *v;
    } else if (auto v2 = value("--checkpoint_dir")) {
      g_config.checkpoint_dir = *v2;
    } else if (auto v3 = value("--train_epochs")) {
      g_config.train_epochs = std::stoll(*v3);
      if (g_config.train_epochs < 1) return false;
    } else if (auto v4 = value("--wait_idle")) {
      g_config.wait_idle = std::stod(*v4);
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  return true;
}

std::string filesystem_of(const fs::path& p) {
  struct statfs s {};
  if (statfs(p.c_str(), &s) != 0) return "unknown";
  switch (static_cast<uint64_t>(s.f_type)) {
    case 0xEF53: return "ext4";
    case 0x01021994: return "tmpfs";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x794C7630: return "overlayfs";
    default: {
      char hex[32];
      std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(s.f_type));
      return hex;
    }
  }
}

std::string first_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s.substr(0, s.find('\n'));
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (!parse_flags(argc, argv)) {
    std::fprintf(stderr, "checkpoint_bench: --train_epochs must be >= 1\n");
    return 2;
  }
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  Fixture fixture;
  int rc = 0;
  try {
    build_fixture(fixture);
    g_fixture = &fixture;
    benchmark::AddCustomContext("plexus", plx::runtime_info());
    benchmark::AddCustomContext("training_data", fixture.data_source);
    benchmark::AddCustomContext("trained_updates", std::to_string(fixture.updates));
    char loss[64];
    std::snprintf(loss, sizeof loss, "%.4f -> %.4f", fixture.first_loss, fixture.last_loss);
    benchmark::AddCustomContext("train_loss_first_last_run", loss);
    benchmark::AddCustomContext("tensors", std::to_string(fixture.manifest.tensors.size()));
    benchmark::AddCustomContext("tensor_bytes", std::to_string(fixture.bytes));
    benchmark::AddCustomContext("checkpoint_dir", fixture.dir.string() + " (" + filesystem_of(fixture.dir) + ")");
    benchmark::AddCustomContext("zstd_cli", zstd_cli().empty() ? "not found" : first_line(run_capture(zstd_cli() + " -V")));
    benchmark::AddCustomContext("libzstd", ZSTD_versionString());
    std::string loadavg;
    std::getline(std::ifstream("/proc/loadavg"), loadavg);
    benchmark::AddCustomContext("loadavg_at_start", loadavg);
    register_benchmarks();
    benchmark::RunSpecifiedBenchmarks();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "checkpoint_bench: %s\n", e.what());
    rc = 1;
  }
  benchmark::Shutdown();
  g_fixture = nullptr;
  fixture.trained.reset();
  if (fixture.remove_dir) {
    std::error_code ec;
    fs::remove_all(fixture.dir, ec);
  }
  return rc;
}
