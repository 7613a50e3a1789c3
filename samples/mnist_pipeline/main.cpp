// mnist_pipeline: seed 003 (PopTorch "Pipelining" tutorial, mnist_pipeline.py) through the
// Plexus C API. The CNN of network.h is split into blocks B1..B4, one stage per block on
// devices 0..3 of each replica, and trained with AdamW and CrossEntropyLoss under
// pipelined (1F1B, or GPipe fill-drain with --schedule fill_drain) or sharded execution,
// gradient accumulation and device iterations; then tested by an inference pipeline.
//
//   samples/mnist_pipeline/mnist_pipeline                        (the seed's defaults)
//   samples/mnist_pipeline/mnist_pipeline --strategy sharded
//   samples/mnist_pipeline/mnist_pipeline --offload-optimiser
//   samples/mnist_pipeline/mnist_pipeline --profile --profile-dir pipeline_profile
//   samples/mnist_pipeline/mnist_pipeline --dataset fashion
#include <plexus/plexus.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "samples/common/checkpointing.h"
#include "samples/common/metrics.h"
#include "samples/common/mnist_data.h"
#include "samples/common/mnist_mlp.h"
#include "samples/common/options.h"
#include "samples/common/profile.h"
#include "samples/common/progress.h"
#include "samples/common/weights_file.h"
#include "samples/mnist_pipeline/network.h"

namespace {

using samples::po::value;

constexpr int64_t kStages = 4;

constexpr unsigned kFeatures = samples::kEpochs | samples::kTestBatch | samples::kCheckpoints | samples::kWeightsOut |
                               samples::kAccumulation | samples::kThreads;

// The common options with seed 003's defaults, and this sample's own.
struct Options : samples::CommonOptions {
  Options() {
    batch_size = 40;
    device_iterations = 10;
    test_batch_size = 8;
    epochs = 3;
    learning_rate = 0.001;
    gradient_accumulation = 10;
    seed = 0;
  }
  int64_t test_device_iterations = 100;
  std::string strategy = "pipelined";
  std::string schedule = "1f1b";
  bool offload_optimiser = false;
  bool debug = false;
};

samples::po::options_description describe(Options& o) {
  samples::po::options_description desc("mnist_pipeline options", samples::kHelpWidth, samples::kHelpWidth / 2);
  desc.add_options()("test-device-iterations",
                     value(&o.test_device_iterations)->default_value(o.test_device_iterations),
                     "inference micro-batches per session run (the seed's inference_iterations)")
      ("strategy", value(&o.strategy)->default_value(o.strategy), "execution strategy: pipelined or sharded")
      ("schedule", value(&o.schedule)->default_value(o.schedule),
       "pipelined schedule: 1f1b (PopART-like steady state) or fill_drain (GPipe)")
      ("offload-optimiser", samples::po::bool_switch(&o.offload_optimiser),
       "keep the AdamW state in host memory, loaded only for the update")
      ("debug", samples::po::bool_switch(&o.debug),
       "print the compiled sessions (stages, schedules, memory) and run times");
  return desc;
}

// This sample's own checks (the common options are checked by parse_sample_options).
void check(const Options& o) {
  samples::require_at_least<int64_t>("test-device-iterations", o.test_device_iterations, 1);
  if (o.strategy != "pipelined" && o.strategy != "sharded") {
    throw samples::UsageError("--strategy must be 'pipelined' or 'sharded', got '" + o.strategy + "'");
  }
  if (o.schedule != "1f1b" && o.schedule != "fill_drain") {
    throw samples::UsageError("--schedule must be '1f1b' or 'fill_drain', got '" + o.schedule + "'");
  }
  if (o.strategy == "pipelined" && o.gradient_accumulation < kStages) {
    throw samples::UsageError("--gradient-accumulation must be >= " + std::to_string(kStages) +
                              " (the number of stages) for pipelined training, got " +
                              std::to_string(o.gradient_accumulation) + " (as PopTorch requires)");
  }
}

// Stages B1..B4 on devices 0..3 (poptorch.Stage("B1").ipu(0), ...), the strategy, and
// options shared by training and inference.
plx::SessionOptions session_options(const Options& o, plx::Stages& stages, int64_t device_iterations) {
  for (int64_t s = 0; s < kStages; ++s) stages.add({"B" + std::to_string(s + 1)}, s);
  plx::SessionOptions opts = samples::common_session_options(o);
  stages.apply(opts);
  opts.execution_strategy = o.strategy.c_str();
  opts.strategy_options = o.strategy == "pipelined" && o.schedule == "fill_drain" ? "fill_drain" : "";
  opts.device_iterations = device_iterations;
  return opts;
}

void print_report(const plx::Session& s, const char* what) {
  const nlohmann::json r = nlohmann::json::parse(s.report());
  std::printf("%s session: strategy %s, %lld micro-batches per iteration, %lld devices per replica\n", what,
              r["execution_strategy"].get<std::string>().c_str(), r["micro_batches_per_iteration"].get<long long>(),
              r["devices_per_replica"].get<long long>());
  for (size_t d = 0; d < r["schedule"].size(); ++d) {
    std::printf("  device %zu: %s\n", d, r["schedule"][d].get<std::string>().c_str());
  }
}

// Device memory per device: arena, resident bytes, and optimizer state in host memory.
nlohmann::json memory_report(const plx::Session& s, bool print) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t d = 0; d < s.num_devices(); ++d) {
    const plx_memory_stats m = s.memory_stats(d);
    if (print) {
      std::printf("  device %zu: arena %lld B (resident %lld B, peak live %lld B), optimizer state on host %lld B\n", d,
                  static_cast<long long>(m.arena_bytes), static_cast<long long>(m.variable_bytes),
                  static_cast<long long>(m.peak_bytes), static_cast<long long>(m.offloaded_bytes));
    }
    out.push_back({{"arena_bytes", m.arena_bytes},
                   {"resident_bytes", m.variable_bytes},
                   {"peak_bytes", m.peak_bytes},
                   {"offloaded_bytes", m.offloaded_bytes}});
  }
  return out;
}

// Writes the last run's trace and the session's memory report beside it (<name>.json,
// <name>.memory.json; samples/common/profile.h) and prints busy and bubble fractions next
// to fill-drain's (S-1)/(M+S-1).
nlohmann::json write_pipeline_profile(const Options& o, const plx::Session& s, const std::string& name, int64_t micro_batches) {
  const samples::ProfileFiles files = samples::write_profile(o, s, name);
  const nlohmann::json other = nlohmann::json::parse(files.trace)["otherData"];
  const double formula = static_cast<double>(kStages - 1) / static_cast<double>(micro_batches + kStages - 1);
  std::printf("  busy fraction per device:");
  for (const auto& b : other["busy_fraction"]) std::printf(" %.1f%%", 100.0 * b.get<double>());
  std::printf("\n  bubble: measured %.1f%% of device time (1 - mean busy); fill-drain formula (S-1)/(M+S-1) = "
              "%lld/%lld = %.1f%%\n",
              100.0 * other["bubble_fraction"].get<double>(), static_cast<long long>(kStages - 1),
              static_cast<long long>(micro_batches + kStages - 1), 100.0 * formula);
  nlohmann::json out = samples::profile_json(files);
  out.update({{"busy_fraction", other["busy_fraction"]},
              {"bubble_fraction", other["bubble_fraction"]},
              {"fill_drain_formula", formula}});
  return out;
}

struct Trained {
  samples::CnnWeights weights;
  double loss = 0, accuracy = 0, samples_per_second = 0;
  int64_t updates = 0;
  nlohmann::json memory, profile;
};

Trained train(const Options& o, samples::ImageSplit& data) {
  samples::CnnTrainProgram t =
      samples::build_cnn_train({o.batch_size, o.replication_factor, o.seed, o.learning_rate});
  plx::Stages stages;
  plx::SessionOptions opts = session_options(o, stages, o.device_iterations);
  opts.gradient_accumulation = o.gradient_accumulation;
  opts.offload_optimizer_state = o.offload_optimiser ? 1 : 0;
  plx::Session session(t.ir, opts);
  if (o.debug) print_report(session, "training");
  Trained result;

  const int64_t micro = o.device_iterations * o.gradient_accumulation;
  const int64_t per_run = micro * o.replication_factor * o.batch_size;
  const int64_t runs_per_epoch = data.size() / per_run;  // drop_last
  samples::Checkpointing checkpointing(o.checkpoint, o.seed, runs_per_epoch);
  const samples::DataPosition from = checkpointing.start(session);
  samples::DataPosition at = from;
  std::vector<float> images(static_cast<size_t>(per_run * samples::kPixels));
  std::vector<int32_t> labels(static_cast<size_t>(per_run));
  std::vector<float> loss(static_cast<size_t>(micro * o.replication_factor));
  std::vector<int32_t> correct(loss.size());
  const plx::Shape image_shape = session.host_shape(t.images), label_shape = session.host_shape(t.labels);
  const plx::Shape out_shape = session.host_shape(t.loss);
  const auto start = std::chrono::steady_clock::now();
  int64_t trained = 0;
  for (int64_t epoch = from.epoch; epoch < o.epochs && o.runs_left(session.step()) > 0; ++epoch) {
    data.shuffle(o.seed + static_cast<uint64_t>(epoch));
    const int64_t first = epoch == from.epoch ? from.run : 0;
    const int64_t last = first + std::min(runs_per_epoch - first, o.runs_left(session.step()));
    samples::Progress bar("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(o.epochs), last - first);
    double loss_sum = 0;
    int64_t hits = 0, seen = 0;
    for (int64_t run = first; run < last; ++run) {
      data.fill(run * per_run, per_run, images.data(), labels.data());
      const auto t0 = std::chrono::steady_clock::now();
      session.run({plx::HostArray(t.images, images.data(), image_shape),
                   plx::HostArray(t.labels, labels.data(), label_shape)},
                  {plx::HostArray(t.loss, loss.data(), out_shape), plx::HostArray(t.correct, correct.data(), out_shape)});
      if (o.debug) {
        std::printf("\n  run %lld: %.1f ms\n", static_cast<long long>(run),
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      for (size_t i = 0; i < loss.size(); ++i) {
        loss_sum += loss[i];
        hits += correct[i];
      }
      seen += per_run;
      result.updates += o.device_iterations;
      char suffix[64];
      std::snprintf(suffix, sizeof suffix, "Loss:%.4f | Accuracy:%.2f%%",
                    loss_sum / static_cast<double>(seen / o.batch_size),
                    100.0 * static_cast<double>(hits) / static_cast<double>(seen));
      bar.update(run + 1 - first, suffix);
      at = {epoch, run + 1};
      checkpointing.after_run(session, at);
    }
    trained += seen;
    result.loss = seen ? loss_sum / static_cast<double>(seen / o.batch_size) : 0.0;
    result.accuracy = seen ? static_cast<double>(hits) / static_cast<double>(seen) : 0.0;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.samples_per_second = seconds > 0 ? static_cast<double>(trained) / seconds : 0.0;
  checkpointing.finish(session, at);
  std::printf("training memory (%s):\n", o.offload_optimiser ? "optimizer state offloaded" : "optimizer state on device");
  result.memory = memory_report(session, true);
  for (const plx::Tensor& p : t.params.tensors) result.weights.values.push_back(session.read<float>(p));
  if (o.profile && trained > 0) result.profile = write_pipeline_profile(o, session, "training", o.gradient_accumulation);
  return result;
}

struct Tested {
  double accuracy = 0;
  int64_t samples = 0;
  nlohmann::json profile;
};

// Inference pipeline over the same stages (the seed's inferenceModel with
// gradientAccumulation 1 and deviceIterations 100); correct counts summed over each run
// by output mode sum.
Tested test(const Options& o, samples::ImageSplit& data, const samples::CnnWeights& weights) {
  plx::Ir ir(o.replication_factor);
  const samples::CnnParams p = samples::add_cnn_variables(ir, weights);
  auto [image_stream, images] = ir.h2d_stream("images", PLX_DTYPE_FLOAT32, {o.test_batch_size, 1, 28, 28});
  auto [label_stream, labels] = ir.h2d_stream("labels", PLX_DTYPE_INT32, {o.test_batch_size});
  const plx::Tensor logits = samples::cnn_forward(ir, images, p);
  plx::Stream correct_stream;
  {
    plx::Block b4(ir, "B4");
    correct_stream = ir.d2h_stream("correct", samples::count_correct(ir, logits, labels));
  }
  plx::Stages stages;
  plx::SessionOptions opts = session_options(o, stages, o.test_device_iterations);
  opts.output_mode = PLX_OUTPUT_SUM;
  plx::Session session(ir, opts);
  if (o.debug) print_report(session, "inference");

  const int64_t per_run = o.test_device_iterations * o.test_batch_size * o.replication_factor;
  const int64_t runs = data.size() / per_run;  // drop_last, as the seed's test DataLoader
  std::vector<float> image_buf(static_cast<size_t>(per_run * samples::kPixels));
  std::vector<int32_t> label_buf(static_cast<size_t>(per_run));
  std::vector<int32_t> correct(static_cast<size_t>(o.replication_factor));
  int64_t hits = 0;
  samples::Progress bar("test", runs);
  for (int64_t i = 0; i < runs; ++i) {
    data.fill(i * per_run, per_run, image_buf.data(), label_buf.data());
    session.run({plx::HostArray(image_stream, image_buf.data(), session.host_shape(image_stream)),
                 plx::HostArray(label_stream, label_buf.data(), session.host_shape(label_stream))},
                {plx::HostArray(correct_stream, correct.data(), session.host_shape(correct_stream))});
    for (int32_t c : correct) hits += c;
    char suffix[48];
    std::snprintf(suffix, sizeof suffix, "Accuracy:%.2f%%",
                  100.0 * static_cast<double>(hits) / static_cast<double>((i + 1) * per_run));
    bar.update(i + 1, suffix);
  }
  Tested result;
  result.samples = runs * per_run;
  result.accuracy = result.samples ? static_cast<double>(hits) / static_cast<double>(result.samples) : 0.0;
  if (o.profile && runs > 0) result.profile = write_pipeline_profile(o, session, "inference", o.test_device_iterations);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  const std::string usage =
      "Usage: mnist_pipeline [options]\nSeed 003: trains the tutorial's CNN with AdamW pipelined over 4 devices\n"
      "on real MNIST (or Fashion-MNIST) with Plexus.";
  const auto check_own = [&] { check(o); };
  if (const auto status = samples::parse_sample_options(argc, argv, "mnist_pipeline", usage, o, kFeatures, describe(o),
                                                        check_own)) {
    return *status;
  }
  try {
    std::printf("plexus: %s\n", plx::runtime_info().c_str());
    const std::string folder = o.dataset_folder();
    samples::ImageSplit train_data(folder, true), test_data(folder, false);
    std::printf("%s: %lld training and %lld test images from %s\n", o.dataset.c_str(),
                static_cast<long long>(train_data.size()), static_cast<long long>(test_data.size()), folder.c_str());
    std::printf("strategy %s%s, 4 stages (B1..B4 on devices 0..3) x %lld replica(s), batch %lld, gradient "
                "accumulation %lld, device iterations %lld, AdamW lr %g, seed %llu\n",
                o.strategy.c_str(), o.strategy == "pipelined" ? (" (" + o.schedule + ")").c_str() : "",
                static_cast<long long>(o.replication_factor), static_cast<long long>(o.batch_size),
                static_cast<long long>(o.gradient_accumulation), static_cast<long long>(o.device_iterations),
                o.learning_rate, static_cast<unsigned long long>(o.seed));
    const Trained trained = train(o, train_data);
    samples::write_weights(o.weights_out, trained.weights.values);
    const Tested tested = test(o, test_data, trained.weights);
    std::printf("Accuracy on test set: %.2f%% (%lld images; train loss %.4f, train accuracy %.2f%%, %lld weight "
                "updates, %.0f samples/s)\n",
                100.0 * tested.accuracy, static_cast<long long>(tested.samples), trained.loss,
                100.0 * trained.accuracy, static_cast<long long>(trained.updates), trained.samples_per_second);
    nlohmann::json metrics = samples::options_json(o, kFeatures);
    metrics.update({{"test_accuracy", tested.accuracy},
                    {"test_samples", tested.samples},
                    {"train_loss", trained.loss},
                    {"train_accuracy", trained.accuracy},
                    {"train_samples_per_second", trained.samples_per_second},
                    {"weight_updates", trained.updates},
                    {"strategy", o.strategy},
                    {"schedule", o.schedule},
                    {"offload_optimiser", o.offload_optimiser},
                    {"device_memory", trained.memory},
                    {"runtime", plx::runtime_info()}});
    if (o.profile) metrics["profile"] = {{"training", trained.profile}, {"inference", tested.profile}};
    samples::write_metrics(o.metrics_out, metrics);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mnist_pipeline: %s\n", e.what());
    return 1;
  }
  return 0;
}
