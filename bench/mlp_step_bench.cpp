// mlp_step_bench: training-step throughput (samples/s) of the PopXL MNIST MLP through the
// public C++ wrapper, exactly the training IR of samples/mnist: reshape -> 784x32 matmul +
// bias -> gelu -> 32x10 matmul + bias -> gelu -> softmax cross-entropy (mean over the
// batch), autodiff, plain SGD (scaled_add_: w <- w - lr * grad), the loss streamed back to
// the host every step (as the sample does for its progress line).
//
// Data are preloaded, synthetic but MNIST-like: 80% of the pixels are background (0), the
// rest uniform in 1..255, normalised as torchvision's Normalize((0.1307,), (0.3081,));
// labels uniform in 0..9. Each session run reads the next device_iterations * batch
// samples of a pool in place (no host-side copy by the benchmark), cycling over the pool.
//
// Benchmarks, all with real (wall-clock) time:
//   BM_MlpTrainStep/batch:B/device_iterations:D   one session run = D training steps
//     (B, D) in {8, 80} x {1, 100}, and (8, 10) for bench/python_overhead.sh
// items_per_second is training samples per second (D * B per run); the "step_time" counter
// is wall time per training step (seconds in the JSON output).
//
//   build-bench/bench/mlp_step_bench --benchmark_min_time=2
#include <plexus/plexus.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "samples/common/mnist_data.h"
#include "samples/common/mnist_mlp.h"

namespace {

using samples::kClasses;
using samples::kPixels;

constexpr double kLr = 0.005;  // the sample's default; the value does not change the work done
constexpr uint64_t kSeed = 42;
constexpr int64_t kPoolSamples = 8000;  // ~25 MB of images: larger than the caches, like a real epoch

/// A pool of normalised MNIST-like images and labels, preloaded in host memory.
struct SyntheticData {
  std::vector<float> images;
  std::vector<int32_t> labels;
  int64_t samples = 0;

  explicit SyntheticData(int64_t n) : images(static_cast<size_t>(n * kPixels)), labels(static_cast<size_t>(n)), samples(n) {
    std::mt19937_64 rng(kSeed);
    std::bernoulli_distribution ink(0.2);
    std::uniform_int_distribution<int> level(1, 255), label(0, static_cast<int>(kClasses) - 1);
    constexpr float scale = 1.0f / (255.0f * samples::kMnistStd), shift = -samples::kMnistMean / samples::kMnistStd;
    for (float& x : images) x = static_cast<float>(ink(rng) ? level(rng) : 0) * scale + shift;
    for (int32_t& y : labels) y = label(rng);
  }
};

/// The sample's training program, compiled, with its streams.
struct TrainSession {
  plx::Stream images, labels, loss;  // declared first: build() fills them while ir is made
  plx::Ir ir;
  plx::Session session;
  plx::Shape image_shape, label_shape, loss_shape;

  static plx::Ir build(int64_t batch, plx::Stream& images, plx::Stream& labels, plx::Stream& loss) {
    plx::Ir ir;
    const samples::MlpParams p = samples::add_mlp_variables(ir, samples::MlpWeights::random(kSeed));
    auto [image_stream, x] = ir.h2d_stream("images", PLX_DTYPE_FLOAT32, {batch, 28, 28});
    auto [label_stream, y] = ir.h2d_stream("labels", PLX_DTYPE_INT32, {batch});
    const plx::Tensor logits = samples::mlp_forward(ir, x, batch, p);
    const plx::Tensor l = ir.softmax_cross_entropy(logits, y);
    loss = ir.d2h_stream("loss", l);
    const std::vector<plx::Tensor> params{p.w0, p.b0, p.w1, p.b1};
    const std::vector<plx::Tensor> grads = ir.autodiff(l, params);
    for (size_t i = 0; i < params.size(); ++i) ir.scaled_add_(params[i], grads[i], 1.0, -kLr);
    images = image_stream;
    labels = label_stream;
    return ir;
  }

  static plx::SessionOptions options(int64_t device_iterations) {
    plx::SessionOptions o;
    o.device_iterations = device_iterations;
    return o;
  }

  TrainSession(int64_t batch, int64_t device_iterations)
      : ir(build(batch, images, labels, loss)),
        session(ir, options(device_iterations)),
        image_shape(session.host_shape(images)),
        label_shape(session.host_shape(labels)),
        loss_shape(session.host_shape(loss)) {}
};

void BM_MlpTrainStep(benchmark::State& state) {
  const int64_t batch = state.range(0), di = state.range(1);
  const int64_t per_run = batch * di;
  static const SyntheticData data(kPoolSamples);  // shared by every benchmark, built once
  if (per_run > data.samples) {
    state.SkipWithError("batch * device_iterations exceeds the data pool");
    return;
  }
  const int64_t runs_in_pool = data.samples / per_run;
  TrainSession t(batch, di);
  std::vector<float> loss(static_cast<size_t>(di));

  int64_t run = 0;
  auto step = [&] {
    const int64_t first = (run++ % runs_in_pool) * per_run;
    t.session.run({plx::HostArray(t.images, data.images.data() + first * kPixels, t.image_shape),
                   plx::HostArray(t.labels, data.labels.data() + first, t.label_shape)},
                  {plx::HostArray(t.loss, loss.data(), t.loss_shape)});
  };
  for (int i = 0; i < 3; ++i) step();  // warm-up: first-touch of buffers, thread wake-up

  for (auto _ : state) {
    step();
    benchmark::DoNotOptimize(loss.data());
  }
  benchmark::ClobberMemory();
  const double steps = static_cast<double>(state.iterations()) * static_cast<double>(di);
  state.SetItemsProcessed(state.iterations() * per_run);
  // Seconds per training step (printed with an SI prefix, e.g. "31.3us").
  state.counters["step_time"] = benchmark::Counter(steps, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["batch"] = static_cast<double>(batch);
  state.counters["device_iterations"] = static_cast<double>(di);
  if (!(loss[0] == loss[0])) state.SkipWithError("loss is NaN");
}

BENCHMARK(BM_MlpTrainStep)
    ->ArgNames({"batch", "device_iterations"})
    ->ArgsProduct({{8, 80}, {1, 100}})
    ->Args({8, 10})  // bench/python_overhead.sh: the Python package against this at D = 1 and 10
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

/// Adds the session's GEMM kernel choices to the benchmark context: "gemm_kernels_batchB"
/// (every GEMM of the step, "; "-separated) and "gemm_batchB_layer0" (the kernel set chosen
/// for the first layer's forward GEMM, Bx784x32, which bench/compare_mlp.sh reads).
void add_kernel_context(int64_t batch) {
  const TrainSession t(batch, 1);
  const nlohmann::json report = nlohmann::json::parse(t.session.report());
  std::string all, layer0;
  const std::string layer0_shape = "sgemm " + std::to_string(batch) + "x784x32 -> ";
  for (const auto& note : report["kernels"]) {
    const std::string line = note.get<std::string>();
    all += (all.empty() ? "" : "; ") + line;
    const size_t at = line.find(layer0_shape);
    if (at != std::string::npos && layer0.empty()) {
      const size_t begin = at + layer0_shape.size();
      layer0 = line.substr(begin, line.find(',', begin) - begin);
    }
  }
  const std::string b = std::to_string(batch);
  benchmark::AddCustomContext("gemm_kernels_batch" + b, all);
  benchmark::AddCustomContext("gemm_batch" + b + "_layer0", layer0);
}

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  try {
    benchmark::AddCustomContext("plexus", plx::runtime_info());
    for (int64_t batch : {8, 80}) add_kernel_context(batch);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlp_step_bench: %s\n", e.what());
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
