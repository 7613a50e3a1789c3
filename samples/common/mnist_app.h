// What the MNIST samples (samples/mnist, samples/mnist_rts) share: their defaults and
// common options (samples/common/options.h), the training loop over a compiled training program (replicas x device
// iterations per run, shuffled real MNIST, running loss and accuracy on a progress bar),
// the test pass, and the metrics and weights files.
#pragma once

#include <plexus/plexus.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <functional>
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
#include "samples/common/train_run.h"
#include "samples/common/weights_file.h"

namespace samples {

/// The defaults of samples/mnist and samples/mnist_rts (PopXL's MNIST example: SGD, batch
/// 8, test batch 80, one epoch, lr 0.005).
inline CommonOptions mnist_defaults() {
  CommonOptions o;
  o.batch_size = 8;
  o.test_batch_size = 80;
  o.epochs = 1;
  o.learning_rate = 0.005;
  o.device_iterations = 1;
  o.seed = 42;
  return o;
}

/// The common options the MNIST samples take.
inline constexpr unsigned kMnistFeatures = kEpochs | kTestBatch | kCheckpoints | kWeightsOut | kLoader | kThreads;

/// A training program: its IR, streams, and the weights to read back afterwards.
struct TrainProgram {
  plx::Ir ir;
  plx::Stream images, labels, loss, correct;
  MlpParams params;  ///< read back as full tensors once training ends
};

/// Adds images [batch, 28, 28] / labels [batch] streams, the forward pass of the MLP with
/// weights `p`, the loss, and loss / correct-count output streams to `t`; returns the loss.
inline plx::Tensor add_training_head(TrainProgram& t, int64_t batch, const MlpParams& p) {
  plx::Ir& ir = t.ir;
  auto [image_stream, images] = ir.h2d_stream("images", PLX_DTYPE_FLOAT32, {batch, 28, 28});
  auto [label_stream, labels] = ir.h2d_stream("labels", PLX_DTYPE_INT32, {batch});
  t.images = image_stream;
  t.labels = label_stream;
  const plx::Tensor logits = mlp_forward(ir, images, batch, p);
  const plx::Tensor loss = ir.softmax_cross_entropy(logits, labels);
  t.correct = ir.d2h_stream("correct", count_correct(ir, logits, labels));
  t.loss = ir.d2h_stream("loss", loss);
  return loss;
}

/// Prints the GEMM kernel choices of a session.
inline void print_kernels(const plx::Session& session) {
  const nlohmann::json report = nlohmann::json::parse(session.report());
  for (const auto& line : report["kernels"]) std::printf("  %s\n", line.get<std::string>().c_str());
}

struct TrainResult {
  MlpWeights weights;
  double samples_per_second = 0;
  double final_loss = 0;
  double train_accuracy = 0;
  int64_t steps = 0;
  int64_t peak_device_bytes = 0;
  nlohmann::json profile;  ///< with --profile: the trace and memory report files (profile_json)
};

/// Trains `t` on `data` for the options' epochs (or --num-steps); `on_session` sees the
/// session once it is compiled (to report memory, kernels, ...). With --profile, writes
/// the last run's trace and the memory report (samples/common/profile.h).
inline TrainResult train(TrainProgram& t, const CommonOptions& o, ImageSplit& data,
                         const std::function<void(const plx::Session&, const TrainProgram&)>& on_session) {
  plx::Session session(t.ir, common_session_options(o));
  on_session(session, t);

  // The data loader feeds images and labels through fill callbacks on the io threads, in
  // the order ImageSplit::shuffle(seed + epoch) gives (seed 003's asynchronous DataLoader).
  const int64_t di = o.device_iterations, b = o.batch_size;
  const int64_t per_run = di * o.replication_factor * b;
  plx_loader_options lo = plx::Loader::default_options();
  lo.batch_size = b;
  lo.replicas = o.replication_factor;
  lo.steps_per_run = di;
  lo.seed = o.seed;
  lo.workers = static_cast<int32_t>(o.loader_workers);
  plx::Loader loader(data.dataset(), lo);
  const int64_t runs_per_epoch = loader.runs_per_epoch();  // drop_last, as torch's DataLoader
  Checkpointing checkpointing(o.checkpoint, o.seed, runs_per_epoch);
  const DataPosition from = checkpointing.start(session);
  const TrainRun run(session, loader, t.images, t.labels, t.loss, t.correct);

  TrainResult result;
  const auto start = std::chrono::steady_clock::now();
  int64_t trained = 0;
  DataPosition at = from;
  for (int64_t epoch = from.epoch; epoch < o.epochs && o.runs_left(session.step()) > 0; ++epoch) {
    const int64_t first = epoch == from.epoch ? from.run : 0;
    const int64_t last = first + std::min(runs_per_epoch - first, o.runs_left(session.step()));
    Progress bar("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(o.epochs), last - first);
    double loss_sum = 0;
    int64_t correct = 0, seen = 0;
    for (int64_t r = first; r < last; ++r) {
      loader.begin_run(epoch, r);
      run.run(session);
      for (size_t i = 0; i < run.losses().size(); ++i) {
        loss_sum += run.losses()[i];
        correct += run.corrects()[i];
      }
      seen += per_run;
      result.steps += di;
      char suffix[96];
      std::snprintf(suffix, sizeof suffix, "loss %.4f acc %.2f%%", loss_sum / static_cast<double>(seen / b),
                    100.0 * static_cast<double>(correct) / static_cast<double>(seen));
      bar.update(r + 1 - first, suffix);
      at = {epoch, r + 1};
      checkpointing.after_run(session, at);
    }
    trained += seen;
    result.final_loss = seen ? loss_sum / static_cast<double>(seen / b) : 0.0;
    result.train_accuracy = seen ? static_cast<double>(correct) / static_cast<double>(seen) : 0.0;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.samples_per_second = seconds > 0 ? static_cast<double>(trained) / seconds : 0.0;
  checkpointing.finish(session, at);
  // Every replica holds the trained weights (one group); sharded ones read back in full.
  const MlpParams& p = t.params;
  result.weights = {session.read<float>(p.w0), session.read<float>(p.b0), session.read<float>(p.w1),
                    session.read<float>(p.b1)};
  result.peak_device_bytes = session.memory_stats(0).peak_bytes;
  if (o.profile && result.steps > 0) result.profile = profile_json(write_profile(o, session, "training"));
  return result;
}

struct TestResult {
  double accuracy = 0;
  int64_t samples = 0;
};

/// Test accuracy with a separate inference session (PopXL's build_test_ir) holding the
/// trained weights; each run takes test_batch_size images per replica (drop_last).
inline TestResult test(const CommonOptions& o, ImageSplit& data, const MlpWeights& weights) {
  plx::Ir ir(o.replication_factor);
  const MlpParams p = add_mlp_variables(ir, weights);
  auto [image_stream, images] = ir.h2d_stream("images", PLX_DTYPE_FLOAT32, {o.test_batch_size, 28, 28});
  auto [label_stream, labels] = ir.h2d_stream("labels", PLX_DTYPE_INT32, {o.test_batch_size});
  const plx::Tensor logits = mlp_forward(ir, images, o.test_batch_size, p);
  const plx::Stream correct_stream = ir.d2h_stream("correct", count_correct(ir, logits, labels));
  plx::Session session(ir);

  const int64_t per_run = o.test_batch_size * o.replication_factor;
  const int64_t batches = data.size() / per_run;
  std::vector<float> image_buf(static_cast<size_t>(per_run * kPixels));
  std::vector<int32_t> label_buf(static_cast<size_t>(per_run));
  std::vector<int32_t> correct_buf(static_cast<size_t>(o.replication_factor));
  int64_t correct = 0;
  Progress bar("test", batches);
  for (int64_t i = 0; i < batches; ++i) {
    data.fill(i * per_run, per_run, image_buf.data(), label_buf.data());
    session.run({plx::HostArray(image_stream, image_buf.data(), session.host_shape(image_stream)),
                 plx::HostArray(label_stream, label_buf.data(), session.host_shape(label_stream))},
                {plx::HostArray(correct_stream, correct_buf.data(), session.host_shape(correct_stream))});
    for (int32_t c : correct_buf) correct += c;
    char suffix[64];
    std::snprintf(suffix, sizeof suffix, "acc %.2f%%",
                  100.0 * static_cast<double>(correct) / static_cast<double>((i + 1) * per_run));
    bar.update(i + 1, suffix);
  }
  TestResult result;
  result.samples = batches * per_run;
  result.accuracy = result.samples ? static_cast<double>(correct) / static_cast<double>(result.samples) : 0.0;
  return result;
}

/// Runs a sample: parses argv (the common options kMnistFeatures picks, bound to `o`, plus
/// the sample's own `own`), loads --dataset, trains the program
/// `build` makes, tests, prints a summary and writes the files. `extra_metrics` adds to
/// the metrics JSON. Returns the process's exit status (2 for a bad command line).
inline int run_mnist_sample(int argc, char** argv, const std::string& name, const std::string& usage,
                            CommonOptions& o, const po::options_description& own,
                            const std::function<TrainProgram()>& build,
                            const std::function<void(const plx::Session&, const TrainProgram&)>& on_session,
                            const std::function<void(nlohmann::json&)>& extra_metrics) {
  if (const auto status = parse_sample_options(argc, argv, name, usage, o, kMnistFeatures, own, [] {})) {
    return *status;
  }
  try {
    std::printf("plexus: %s\n", plx::runtime_info().c_str());
    const std::string folder = o.dataset_folder();
    ImageSplit train_data(folder, true);
    ImageSplit test_data(folder, false);
    std::printf("%s: %lld training and %lld test images from %s\n", o.dataset.c_str(),
                static_cast<long long>(train_data.size()), static_cast<long long>(test_data.size()), folder.c_str());
    TrainProgram program = build();
    const TrainResult trained = train(program, o, train_data, on_session);
    write_weights(o.weights_out, {trained.weights.w0, trained.weights.b0, trained.weights.w1, trained.weights.b1});
    const TestResult tested = test(o, test_data, trained.weights);
    std::printf("test accuracy: %.2f%% on %lld images (replication factor %lld, batch %lld per replica; train loss "
                "%.4f, train accuracy %.2f%%, %lld steps, %.0f samples/s)\n",
                100.0 * tested.accuracy, static_cast<long long>(tested.samples),
                static_cast<long long>(o.replication_factor), static_cast<long long>(o.batch_size), trained.final_loss,
                100.0 * trained.train_accuracy, static_cast<long long>(trained.steps), trained.samples_per_second);
    nlohmann::json metrics = options_json(o, kMnistFeatures);
    metrics.update({{"test_accuracy", tested.accuracy},
                    {"test_samples", tested.samples},
                    {"train_samples_per_second", trained.samples_per_second},
                    {"train_loss", trained.final_loss},
                    {"train_accuracy", trained.train_accuracy},
                    {"train_steps", trained.steps},
                    {"peak_device_bytes", trained.peak_device_bytes},
                    {"runtime", plx::runtime_info()}});
    if (o.profile) metrics["profile"] = {{"training", trained.profile}};
    extra_metrics(metrics);
    write_metrics(o.metrics_out, metrics);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), e.what());
    return 1;
  }
  return 0;
}

}  // namespace samples
