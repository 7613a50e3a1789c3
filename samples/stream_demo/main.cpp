// stream_demo: host <-> device streaming on real MNIST. Seed 003's CNN (network.h, blocks
// B1..B4 in one stage on device 0) trains with AdamW while its image and label streams are
// filled by a plx::Loader's callbacks on the session's io threads, up to --prefetch-depth
// micro-batches ahead of compute, and the loss and correct count of each micro-batch come
// back through deliver callbacks, optionally slowed by --slow-consumer-ms to show
// back-pressure (full device-to-host queues stall the device; memory stays bounded). Each
// run shows batches/s, host->device and device->host MB/s, queue occupancy and the
// fraction of transfer time hidden behind compute (plx_session_get_stream_stats).
//
//   samples/stream_demo/stream_demo --data-dir data
//   samples/stream_demo/stream_demo --prefetch-depth 0 --num-steps 500
//   samples/stream_demo/stream_demo --slow-consumer-ms 5 --num-steps 500
//   samples/stream_demo/stream_demo --dataset fashion --replication-factor 2
#include <plexus/plexus.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "samples/common/metrics.h"
#include "samples/common/mnist_data.h"
#include "samples/common/mnist_mlp.h"
#include "samples/common/options.h"
#include "samples/common/profile.h"
#include "samples/common/progress.h"
#include "samples/mnist_pipeline/network.h"

namespace {

using samples::po::value;

constexpr unsigned kFeatures = samples::kEpochs | samples::kLoader | samples::kThreads;

// The common options with this demo's defaults (seed 003's batch, device iterations and
// AdamW learning rate), and its own.
struct Options : samples::CommonOptions {
  Options() {
    batch_size = 40;
    device_iterations = 10;
    learning_rate = 0.001;
    seed = 0;
  }
  int32_t io_threads = 1;
  int64_t slow_consumer_ms = 0;
};

samples::po::options_description describe(Options& o) {
  samples::po::options_description desc("stream_demo options", samples::kHelpWidth, samples::kHelpWidth / 2);
  desc.add_options()("io-threads", value(&o.io_threads)->default_value(o.io_threads),
                     "session io threads running the fill and deliver callbacks (1 .. 64)")
      ("slow-consumer-ms", value(&o.slow_consumer_ms)->default_value(o.slow_consumer_ms),
       "sleep this long in every deliver callback (back-pressure demo)");
  return desc;
}

// This demo's own checks (the common options are checked by parse_sample_options).
void check(const Options& o) {
  const std::array<int64_t, 4> depths{0, 1, 2, 4};
  if (std::find(depths.begin(), depths.end(), o.prefetch_depth) == depths.end()) {
    throw samples::UsageError("--prefetch-depth must be 0, 1, 2 or 4 here, got " + std::to_string(o.prefetch_depth));
  }
  samples::require_at_least<int32_t>("io-threads", o.io_threads, 1);
  if (o.io_threads > 64) throw samples::UsageError("--io-threads must be <= 64, got " + std::to_string(o.io_threads));
  samples::require_at_least<int64_t>("slow-consumer-ms", o.slow_consumer_ms, 0);
}

/// Receives the loss and correct count of every micro-batch on the io threads (deliver
/// callbacks), sleeping slow_ms in each call: a slow consumer whose device-to-host queues
/// fill up and stall the device.
class Consumer {
 public:
  Consumer(plx::Stream loss, plx::Stream correct, int64_t slow_ms) : loss_(loss), correct_(correct), slow_ms_(slow_ms) {}

  /// The deliver callbacks of the loss and correct streams; valid while this lives.
  std::array<plx_stream_callback, 2> callbacks() {
    return {plx_stream_callback{loss_.id, nullptr, &Consumer::deliver, this},
            plx_stream_callback{correct_.id, nullptr, &Consumer::deliver, this}};
  }

  /// Sum of the losses, number of losses and of correct predictions received so far.
  struct Totals {
    double loss_sum = 0;
    int64_t losses = 0, correct = 0;
  };
  Totals totals() {
    const std::lock_guard lock(mutex_);
    return totals_;
  }

 private:
  static plx_status deliver(void* user_data, plx_stream stream, int64_t, int64_t, const void* data, size_t bytes) {
    auto& self = *static_cast<Consumer*>(user_data);
    if (bytes != 4) return PLX_ERR_SHAPE_MISMATCH;  // both streams are 4-byte scalars
    if (self.slow_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(self.slow_ms_));
    const std::lock_guard lock(self.mutex_);
    if (stream == self.loss_.id) {
      float loss;
      std::memcpy(&loss, data, sizeof loss);
      self.totals_.loss_sum += loss;
      ++self.totals_.losses;
    } else {
      int32_t correct;
      std::memcpy(&correct, data, sizeof correct);
      self.totals_.correct += correct;
    }
    return PLX_OK;
  }

  plx::Stream loss_, correct_;
  int64_t slow_ms_;
  std::mutex mutex_;
  Totals totals_;
};

/// Streaming figures of one run, or of all runs summed.
struct Figures {
  int64_t batches = 0, run_ns = 0, h2d_bytes = 0, d2h_bytes = 0, transfer_ns = 0, exposed_wait_ns = 0;
  int64_t micro_batches = 0;   ///< host-to-device buffers taken (all streams)
  double occupancy_sum = 0;    ///< mean_occupancy x micro_batches
  int64_t prefetch_depth = 0;

  static Figures of(const plx_stream_stats& s, int64_t batches) {
    return {batches,
            s.run_ns,
            static_cast<int64_t>(s.h2d_bytes),
            static_cast<int64_t>(s.d2h_bytes),
            s.transfer_ns,
            s.exposed_wait_ns,
            s.micro_batches,
            s.mean_occupancy * static_cast<double>(s.micro_batches),
            s.prefetch_depth};
  }
  void add(const Figures& f) {
    batches += f.batches;
    run_ns += f.run_ns;
    h2d_bytes += f.h2d_bytes;
    d2h_bytes += f.d2h_bytes;
    transfer_ns += f.transfer_ns;
    exposed_wait_ns += f.exposed_wait_ns;
    micro_batches += f.micro_batches;
    occupancy_sum += f.occupancy_sum;
    prefetch_depth = f.prefetch_depth;
  }

  double seconds() const { return static_cast<double>(run_ns) * 1e-9; }
  double batches_per_second() const { return run_ns > 0 ? static_cast<double>(batches) / seconds() : 0.0; }
  double h2d_mb_per_second() const { return run_ns > 0 ? static_cast<double>(h2d_bytes) * 1e3 / static_cast<double>(run_ns) : 0.0; }
  double d2h_mb_per_second() const { return run_ns > 0 ? static_cast<double>(d2h_bytes) * 1e3 / static_cast<double>(run_ns) : 0.0; }
  double mean_occupancy() const { return micro_batches > 0 ? occupancy_sum / static_cast<double>(micro_batches) : 0.0; }
  /// 1 - exposed_wait / transfer in [0, 1]; 0 with depth 0 (the devices do the copies).
  double hidden() const {
    if (prefetch_depth == 0 || transfer_ns <= 0) return 0.0;
    return std::clamp(1.0 - static_cast<double>(exposed_wait_ns) / static_cast<double>(transfer_ns), 0.0, 1.0);
  }

  std::string line() const {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%.1f batch/s | h2d %.2f MB/s | d2h %.4f MB/s | queue %.2f/%lld | hidden %.1f%%",
                  batches_per_second(), h2d_mb_per_second(), d2h_mb_per_second(), mean_occupancy(),
                  static_cast<long long>(prefetch_depth), 100.0 * hidden());
    return buf;
  }

  nlohmann::json json() const {
    return {{"batches", batches},
            {"run_ns", run_ns},
            {"batches_per_second", batches_per_second()},
            {"h2d_bytes", h2d_bytes},
            {"d2h_bytes", d2h_bytes},
            {"h2d_mb_per_second", h2d_mb_per_second()},
            {"d2h_mb_per_second", d2h_mb_per_second()},
            {"transfer_ns", transfer_ns},
            {"exposed_wait_ns", exposed_wait_ns},
            {"mean_occupancy", mean_occupancy()},
            {"hidden_fraction", hidden()}};
  }
};

/// Peak resident memory of this process in MiB (getrusage).
double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

int run_demo(const Options& o) {
  std::printf("plexus: %s\n", plx::runtime_info().c_str());
  const std::string folder = o.dataset_folder();
  const plx::Dataset data(samples::idx_path(folder, "train-images-idx3-ubyte"),
                          samples::idx_path(folder, "train-labels-idx1-ubyte"));

  samples::CnnTrainProgram t =
      samples::build_cnn_train({o.batch_size, o.replication_factor, o.seed, o.learning_rate});
  plx::Stages stages;
  stages.add({"B1", "B2", "B3", "B4"}, 0);
  plx::SessionOptions opts = samples::common_session_options(o);
  stages.apply(opts);
  opts.io_threads = o.io_threads;
  plx::Session session(t.ir, opts);

  plx_loader_options lo = plx::Loader::default_options();
  lo.batch_size = o.batch_size;
  lo.replicas = o.replication_factor;
  lo.steps_per_run = o.device_iterations;
  lo.seed = o.seed;
  lo.workers = static_cast<int32_t>(o.loader_workers);
  plx::Loader loader(data, lo);
  Consumer consumer(t.loss, t.correct, o.slow_consumer_ms);
  const std::array<plx_stream_callback, 2> fills = loader.callbacks(t.images.id, t.labels.id);
  const std::array<plx_stream_callback, 2> delivers = consumer.callbacks();
  const std::array<plx_stream_callback, 4> callbacks{fills[0], fills[1], delivers[0], delivers[1]};
  plx::RunOptions run_options;
  run_options.callbacks = callbacks.data();
  run_options.num_callbacks = callbacks.size();

  const int64_t runs_per_epoch = loader.runs_per_epoch();
  // One micro-batch of the four streams (images, labels, loss, correct) of every replica.
  const int64_t item_bytes = o.replication_factor * (o.batch_size * (samples::kPixels * 4 + 4) + 2 * 4);
  const int64_t batches_per_run = o.device_iterations * o.replication_factor;
  std::printf("%s: %lld training images from %s; %lld run(s) per epoch of %lld batches of %lld (%lld replica(s)); "
              "prefetch depth %lld (stream queues hold at most %lld KiB), %d io thread(s), %lld loader worker(s), "
              "slow consumer %lld ms\n",
              o.dataset.c_str(), static_cast<long long>(data.size()), folder.c_str(),
              static_cast<long long>(runs_per_epoch), static_cast<long long>(batches_per_run),
              static_cast<long long>(o.batch_size), static_cast<long long>(o.replication_factor),
              static_cast<long long>(o.prefetch_depth), static_cast<long long>(o.prefetch_depth * item_bytes / 1024),
              o.io_threads, static_cast<long long>(o.loader_workers), static_cast<long long>(o.slow_consumer_ms));

  Figures total;
  nlohmann::json per_run = nlohmann::json::object();  // one array per figure, one entry per run
  const auto start = std::chrono::steady_clock::now();
  for (int64_t epoch = 0; epoch < o.epochs && o.runs_left(session.step()) > 0; ++epoch) {
    const int64_t runs = std::min(runs_per_epoch, o.runs_left(session.step()));
    samples::Progress bar("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(o.epochs), runs);
    for (int64_t run = 0; run < runs; ++run) {
      loader.begin_run(epoch, run);
      session.run_with(run_options);
      const Figures f = Figures::of(session.stream_stats(), batches_per_run);
      total.add(f);
      per_run["epoch"].push_back(epoch);
      per_run["run"].push_back(run);
      const nlohmann::json figures = f.json();
      for (const auto& [key, v] : figures.items()) per_run[key].push_back(v);
      bar.update(run + 1, f.line());
    }
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json profile;
  if (o.profile && total.batches > 0) profile = samples::profile_json(samples::write_profile(o, session, "training"));
  const Consumer::Totals c = consumer.totals();
  const double loss = c.losses > 0 ? c.loss_sum / static_cast<double>(c.losses) : 0.0;
  const double accuracy = c.losses > 0 ? static_cast<double>(c.correct) / static_cast<double>(c.losses * o.batch_size) : 0.0;
  std::printf("summary: depth %lld, %lld batches in %.2f s (%.2f s in runs): %s | transfer %.1f ms, exposed wait "
              "%.1f ms | train loss %.4f, accuracy %.2f%% | peak RSS %.0f MiB\n",
              static_cast<long long>(o.prefetch_depth), static_cast<long long>(total.batches), wall, total.seconds(),
              total.line().c_str(), static_cast<double>(total.transfer_ns) * 1e-6,
              static_cast<double>(total.exposed_wait_ns) * 1e-6, loss, 100.0 * accuracy, peak_rss_mib());

  nlohmann::json totals = total.json();
  totals["wall_seconds"] = wall;
  totals["train_loss"] = loss;
  totals["train_accuracy"] = accuracy;
  totals["peak_rss_mib"] = peak_rss_mib();
  nlohmann::json options = samples::options_json(o, kFeatures);
  options.update({{"io_threads", o.io_threads}, {"slow_consumer_ms", o.slow_consumer_ms}});
  nlohmann::json metrics = {{"options", options}, {"runs", per_run}, {"totals", totals}, {"runtime", plx::runtime_info()}};
  if (o.profile) metrics["profile"] = {{"training", profile}};
  samples::write_metrics(o.metrics_out, metrics);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  const std::string usage =
      "Usage: stream_demo [options]\nTrains seed 003's CNN on real MNIST (or Fashion-MNIST) with streams fed by\n"
      "data loader callbacks and prefetched ahead of compute (--prefetch-depth 0, 1, 2 or 4).";
  if (const auto status =
          samples::parse_sample_options(argc, argv, "stream_demo", usage, o, kFeatures, describe(o), [&] { check(o); })) {
    return *status;
  }
  try {
    return run_demo(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stream_demo: %s\n", e.what());
    return 1;
  }
}
