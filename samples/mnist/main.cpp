// mnist: the PopXL MNIST example (the model seed 000 starts from) trained and tested on
// real MNIST through the Plexus C API, with plain SGD (w += -lr * grad via scaled_add_).
//
//   samples/mnist/mnist --epochs 1 --batch-size 8 --lr 0.005
//
// Training runs `device_iterations` batches per session run; the test pass uses its own
// session (PopXL's build_test_ir) loaded with the trained weights.
#include <plexus/plexus.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "samples/common/cli.h"
#include "samples/common/metrics.h"
#include "samples/common/mnist_data.h"
#include "samples/common/mnist_mlp.h"
#include "samples/common/progress.h"

namespace {

using samples::kClasses;
using samples::kHidden;
using samples::kPixels;

struct Options {
  int64_t batch_size = 8;
  int64_t test_batch_size = 80;
  int64_t epochs = 1;
  double lr = 0.005;
  int64_t device_iterations = 1;
  uint64_t seed = 42;
  std::string data_dir = "data";
  std::string dataset = "mnist";
  std::string metrics_out;
};

bool parse(int argc, char** argv, Options& o) {
  namespace po = samples::po;
  po::options_description desc("Options");
  desc.add_options()("help,h", "show this help")
      ("batch-size", po::value(&o.batch_size)->default_value(o.batch_size), "training micro-batch size")
      ("test-batch-size", po::value(&o.test_batch_size)->default_value(o.test_batch_size), "test batch size")
      ("epochs", po::value(&o.epochs)->default_value(o.epochs), "passes over the training set")
      ("lr", po::value(&o.lr)->default_value(o.lr), "SGD learning rate")
      ("device-iterations", po::value(&o.device_iterations)->default_value(o.device_iterations),
       "training batches per session run")
      ("seed", po::value(&o.seed)->default_value(o.seed), "seed for weight init and shuffling")
      ("data-dir", po::value(&o.data_dir)->default_value(o.data_dir), "folder holding mnist/ and fashion-mnist/")
      ("dataset", po::value(&o.dataset)->default_value(o.dataset), "mnist or fashion")
      ("metrics-out", po::value(&o.metrics_out), "write metrics as JSON to this file");
  po::variables_map vm;
  if (!samples::parse_command_line(argc, argv, desc, vm,
                                   "Usage: mnist [options]\nTrains the PopXL MNIST MLP on real MNIST with Plexus.")) {
    return false;
  }
  samples::require_at_least<int64_t>("batch-size", o.batch_size, 1);
  samples::require_at_least<int64_t>("test-batch-size", o.test_batch_size, 1);
  samples::require_at_least<int64_t>("epochs", o.epochs, 0);
  samples::require_at_least<int64_t>("device-iterations", o.device_iterations, 1);
  if (!(o.lr > 0.0)) throw samples::UsageError("--lr must be > 0, got " + std::to_string(o.lr));
  samples::dataset_folder(o.data_dir, o.dataset);  // validates --dataset
  return true;
}

// Prints the runtime line and the GEMM kernel choices of a session.
void print_kernels(const plx::Session& session) {
  const nlohmann::json report = nlohmann::json::parse(session.report());
  for (const auto& line : report["kernels"]) std::printf("  %s\n", line.get<std::string>().c_str());
}

struct TrainResult {
  samples::MlpWeights weights;
  double samples_per_second = 0;
  double final_loss = 0;
  double train_accuracy = 0;
  int64_t peak_device_bytes = 0;
};

TrainResult train(const Options& o, samples::ImageSplit& data) {
  plx::Ir ir;
  const samples::MlpParams p = samples::add_mlp_variables(ir, samples::MlpWeights::random(o.seed));
  auto [image_stream, images] = ir.h2d_stream("images", PLX_DTYPE_FLOAT32, {o.batch_size, 28, 28});
  auto [label_stream, labels] = ir.h2d_stream("labels", PLX_DTYPE_INT32, {o.batch_size});
  const plx::Tensor logits = samples::mlp_forward(ir, images, o.batch_size, p);
  const plx::Tensor loss = ir.softmax_cross_entropy(logits, labels);
  const plx::Stream correct_stream = ir.d2h_stream("correct", samples::count_correct(ir, logits, labels));
  const plx::Stream loss_stream = ir.d2h_stream("loss", loss);
  const std::vector<plx::Tensor> params{p.w0, p.b0, p.w1, p.b1};
  const std::vector<plx::Tensor> grads = ir.autodiff(loss, params);
  for (size_t i = 0; i < params.size(); ++i) ir.scaled_add_(params[i], grads[i], 1.0, -o.lr);

  plx::SessionOptions opts;
  opts.device_iterations = o.device_iterations;
  plx::Session session(ir, opts);
  std::printf("train session: %zu device(s), GEMM kernels:\n", session.num_devices());
  print_kernels(session);

  const int64_t di = o.device_iterations, b = o.batch_size;
  const int64_t runs_per_epoch = data.size() / (b * di);  // drop_last, as torch's DataLoader
  std::vector<float> image_buf(static_cast<size_t>(di * b * kPixels));
  std::vector<int32_t> label_buf(static_cast<size_t>(di * b));
  std::vector<float> loss_buf(static_cast<size_t>(di));
  std::vector<int32_t> correct_buf(static_cast<size_t>(di));
  const plx::Shape run_shape = session.host_shape(image_stream);
  const plx::Shape label_shape = session.host_shape(label_stream);
  const plx::Shape scalar_shape = session.host_shape(loss_stream);

  TrainResult result;
  const auto start = std::chrono::steady_clock::now();
  int64_t trained = 0;
  for (int64_t epoch = 0; epoch < o.epochs; ++epoch) {
    data.shuffle(o.seed + static_cast<uint64_t>(epoch));
    samples::Progress bar("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(o.epochs), runs_per_epoch);
    double loss_sum = 0;
    int64_t correct = 0, seen = 0;
    for (int64_t run = 0; run < runs_per_epoch; ++run) {
      data.fill(run * di * b, di * b, image_buf.data(), label_buf.data());
      session.run({plx::HostArray(image_stream, image_buf.data(), run_shape),
                   plx::HostArray(label_stream, label_buf.data(), label_shape)},
                  {plx::HostArray(loss_stream, loss_buf.data(), scalar_shape),
                   plx::HostArray(correct_stream, correct_buf.data(), scalar_shape)});
      for (int64_t i = 0; i < di; ++i) {
        loss_sum += loss_buf[static_cast<size_t>(i)];
        correct += correct_buf[static_cast<size_t>(i)];
      }
      seen += di * b;
      char suffix[96];
      std::snprintf(suffix, sizeof suffix, "loss %.4f acc %.2f%%", loss_sum / static_cast<double>(seen / b),
                    100.0 * static_cast<double>(correct) / static_cast<double>(seen));
      bar.update(run + 1, suffix);
    }
    trained += seen;
    result.final_loss = seen ? loss_sum / static_cast<double>(seen / b) : 0.0;
    result.train_accuracy = seen ? static_cast<double>(correct) / static_cast<double>(seen) : 0.0;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.samples_per_second = seconds > 0 ? static_cast<double>(trained) / seconds : 0.0;
  result.weights.w0 = session.read<float>(p.w0);
  result.weights.b0 = session.read<float>(p.b0);
  result.weights.w1 = session.read<float>(p.w1);
  result.weights.b1 = session.read<float>(p.b1);
  result.peak_device_bytes = session.memory_stats(0).peak_bytes;
  return result;
}

// Test accuracy with a separate inference session holding the trained weights.
double test(const Options& o, samples::ImageSplit& data, const samples::MlpWeights& weights) {
  plx::Ir ir;
  const samples::MlpParams p = samples::add_mlp_variables(ir, weights);
  auto [image_stream, images] = ir.h2d_stream("images", PLX_DTYPE_FLOAT32, {o.test_batch_size, 28, 28});
  auto [label_stream, labels] = ir.h2d_stream("labels", PLX_DTYPE_INT32, {o.test_batch_size});
  const plx::Tensor logits = samples::mlp_forward(ir, images, o.test_batch_size, p);
  const plx::Stream correct_stream = ir.d2h_stream("correct", samples::count_correct(ir, logits, labels));
  plx::Session session(ir);

  const int64_t batches = data.size() / o.test_batch_size;
  std::vector<float> image_buf(static_cast<size_t>(o.test_batch_size * kPixels));
  std::vector<int32_t> label_buf(static_cast<size_t>(o.test_batch_size));
  int32_t correct_one = 0;
  int64_t correct = 0;
  samples::Progress bar("test", batches);
  for (int64_t i = 0; i < batches; ++i) {
    data.fill(i * o.test_batch_size, o.test_batch_size, image_buf.data(), label_buf.data());
    session.run({plx::HostArray(image_stream, image_buf.data(), {o.test_batch_size, 28, 28}),
                 plx::HostArray(label_stream, label_buf.data(), {o.test_batch_size})},
                {plx::HostArray(correct_stream, &correct_one, {})});
    correct += correct_one;
    char suffix[64];
    std::snprintf(suffix, sizeof suffix, "acc %.2f%%",
                  100.0 * static_cast<double>(correct) / static_cast<double>((i + 1) * o.test_batch_size));
    bar.update(i + 1, suffix);
  }
  return batches ? static_cast<double>(correct) / static_cast<double>(batches * o.test_batch_size) : 0.0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    if (!parse(argc, argv, o)) return 0;
  } catch (const std::invalid_argument& e) {  // samples::UsageError and bad --dataset
    std::fprintf(stderr, "mnist: error: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    std::printf("plexus: %s\n", plx::runtime_info().c_str());
    const std::string folder = samples::dataset_folder(o.data_dir, o.dataset);
    samples::ImageSplit train_data(folder, true);
    samples::ImageSplit test_data(folder, false);
    std::printf("%s: %lld training and %lld test images from %s\n", o.dataset.c_str(),
                static_cast<long long>(train_data.size()), static_cast<long long>(test_data.size()), folder.c_str());
    const TrainResult trained = train(o, train_data);
    const double accuracy = test(o, test_data, trained.weights);
    std::printf("test accuracy: %.2f%%  (train loss %.4f, train accuracy %.2f%%, %.0f samples/s)\n", 100.0 * accuracy,
                trained.final_loss, 100.0 * trained.train_accuracy, trained.samples_per_second);
    samples::write_metrics(o.metrics_out, {{"test_accuracy", accuracy},
                                           {"train_samples_per_second", trained.samples_per_second},
                                           {"train_loss", trained.final_loss},
                                           {"train_accuracy", trained.train_accuracy},
                                           {"epochs", o.epochs},
                                           {"batch_size", o.batch_size},
                                           {"test_batch_size", o.test_batch_size},
                                           {"lr", o.lr},
                                           {"device_iterations", o.device_iterations},
                                           {"seed", o.seed},
                                           {"dataset", o.dataset},
                                           {"peak_device_bytes", trained.peak_device_bytes},
                                           {"runtime", plx::runtime_info()}});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mnist: %s\n", e.what());
    return 1;
  }
  return 0;
}
