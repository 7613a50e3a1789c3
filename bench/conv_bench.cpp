// conv_bench: GFLOP/s of conv2d and its gradient ops on the conv layers of the seed CNNs,
// next to plain BLIS sgemm (a matmul session) at the im2col GEMM shapes of the whole batch
// (the same FLOPs), measured in the same process:
//
//   seed003_layer1: x [40,1,28,28]  * w [10,1,5,5]  -> [40,10,24,24]  K = 25,  P = 576
//   seed003_layer2: x [40,10,12,12] * w [20,10,5,5] -> [40,20,8,8]    K = 250, P = 64
//     (seed 003's CNN, PopTorch mnist_pipeline, batch 40)
//   seed002_conv:   x [64,1,28,28]  * w [32,1,3,3]  -> [64,32,26,26]  K = 9,   P = 676
//     (seed 002's CNN, samples/distributed_training/network.h, batch 64)
//
// Benchmarks (wall-clock time; every op of a session runs on the device thread, one BLIS
// thread, device_iterations 10 so that a run's fixed cost is amortised):
//   conv2d/layerL                   forward, with bias
//   conv2d_grad_input/layerL        dx = col2im(W^T dY)
//   conv2d_grad_weight/layerL       dW = dY im2col(x)^T
//   conv2d_train/layerL             all of a training step's conv work: forward, dx, dW, db
//   sgemm/layerL_{forward,grad_input,grad_weight}   the same product as one plain GEMM over
//                                   the whole batch (n or k = N*P), inputs in GEMM layout
// The FLOPS counter is 2*N*F*K*P per GEMM-shaped product (bias, db, im2col and col2im count
// for nothing), so conv2d/sgemm shows what the conv costs beyond the GEMM's FLOPs. The
// context lists the kernels every conv op runs.
//
//   build/bench/conv_bench --benchmark_min_time=0.2
#include <plexus/plexus.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr int64_t kDeviceIterations = 10;

/// One conv layer of a seed CNN at its batch size (stride 1, no padding, square kernel).
struct Layer {
  const char* name;
  int64_t batch, c, h, w, f, k;  // images, input channels and size, filters, kernel size (square)

  int64_t oh() const { return h - k + 1; }
  int64_t ow() const { return w - k + 1; }
  int64_t kdim() const { return c * k * k; }  // K of the im2col GEMM
  int64_t p() const { return oh() * ow(); }   // output pixels per image
  plx::Shape x_shape() const { return {batch, c, h, w}; }
  plx::Shape w_shape() const { return {f, c, k, k}; }
  plx::Shape y_shape() const { return {batch, f, oh(), ow()}; }
  /// 2*M*N*K of one im2col GEMM over the whole batch.
  double gemm_flops() const { return 2.0 * static_cast<double>(f * kdim() * batch * p()); }
};

const Layer kLayers[] = {{"seed003_layer1", 40, 1, 28, 28, 10, 5},
                         {"seed003_layer2", 40, 10, 12, 12, 20, 5},
                         {"seed002_conv", 64, 1, 28, 28, 32, 3}};

/// Uniform [-1, 1) values from a fixed seed.
std::vector<float> random_data(const plx::Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(plx::numel(shape)));
  for (float& x : v) x = dist(rng);
  return v;
}

/// One BLIS thread, kDeviceIterations steps per run.
plx::SessionOptions options() {
  plx::SessionOptions o;
  o.device_iterations = kDeviceIterations;
  o.threads_per_device = 1;
  return o;
}

/// A compiled session of variables and ops, no streams: each run executes the ops
/// kDeviceIterations times.
struct Bench {
  plx::Ir ir;
  std::optional<plx::Session> session;

  plx::Tensor var(const std::string& name, const plx::Shape& shape, uint32_t seed) {
    return ir.variable<float>(name, shape, random_data(shape, seed));
  }
  void compile() { session.emplace(ir, options()); }
};

/// Times runs of b's session; `flops_per_step` is the FLOPS counter's work per step.
void run(benchmark::State& state, Bench& b, double flops_per_step) {
  for (int i = 0; i < 2; ++i) b.session->run({});  // warm-up: first touch of the arena
  for (auto _ : state) b.session->run({});
  state.counters["FLOPS"] = benchmark::Counter(flops_per_step * kDeviceIterations,
                                               benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

/// Attributes of a gradient op of the layer (stride 1, no padding) with its shape attribute.
std::vector<plx::Attr> grad_attrs(const char* shape_name, const plx::Shape& shape) {
  return {{"stride", plx::Shape{1, 1}}, {"padding", plx::Shape{0, 0}}, {shape_name, shape}};
}

/// Which conv work a benchmark runs.
enum class Pass { Forward, GradInput, GradWeight, Train };

// Builds the conv session of one pass.
void build_conv(Bench& b, const Layer& l, Pass pass) {
  const plx::Tensor x = b.var("x", l.x_shape(), 1), w = b.var("w", l.w_shape(), 2);
  const plx::Tensor bias = b.var("b", {l.f}, 3), dy = b.var("dy", l.y_shape(), 4);
  if (pass == Pass::Forward || pass == Pass::Train) b.ir.conv2d(x, w, bias);
  if (pass == Pass::GradInput || pass == Pass::Train) b.ir.op("conv2d_grad_input", {dy, w}, grad_attrs("input_shape", l.x_shape()));
  if (pass == Pass::GradWeight || pass == Pass::Train) b.ir.op("conv2d_grad_weight", {x, dy}, grad_attrs("weight_shape", l.w_shape()));
  if (pass == Pass::Train) b.ir.reduce_sum(dy, {0, 2, 3});
  b.compile();
}

/// conv2d and / or its gradient ops on the layer.
void BM_Conv(benchmark::State& state, const Layer& l, Pass pass) {
  Bench b;
  build_conv(b, l, pass);
  run(state, b, pass == Pass::Train ? 3.0 * l.gemm_flops() : l.gemm_flops());
}

// The im2col GEMM of each pass as a plain matmul: forward [F,K] x [K,NP]; grad_input
// [F,K]^T x [F,NP]; grad_weight [F,NP] x [K,NP]^T.
void BM_Sgemm(benchmark::State& state, const Layer& l, Pass pass) {
  Bench b;
  const int64_t f = l.f, k = l.kdim(), np = l.batch * l.p();
  if (pass == Pass::Forward) b.ir.matmul(b.var("a", {f, k}, 1), b.var("b", {k, np}, 2));
  if (pass == Pass::GradInput) b.ir.matmul(b.var("a", {f, k}, 1), b.var("b", {f, np}, 2), true, false);
  if (pass == Pass::GradWeight) b.ir.matmul(b.var("a", {f, np}, 1), b.var("b", {k, np}, 2), false, true);
  b.compile();
  run(state, b, l.gemm_flops());
}

/// Pass as a benchmark name suffix.
const char* pass_name(Pass p) {
  switch (p) {
    case Pass::Forward: return "forward";
    case Pass::GradInput: return "grad_input";
    case Pass::GradWeight: return "grad_weight";
    case Pass::Train: return "train";
  }
  return "";
}

/// Registers every benchmark: per layer, the conv passes, then the sgemm baselines.
void register_all() {
  for (const Layer& l : kLayers) {
    const std::string layer = l.name;
    const std::pair<Pass, const char*> conv_benches[] = {{Pass::Forward, "conv2d"},
                                                         {Pass::GradInput, "conv2d_grad_input"},
                                                         {Pass::GradWeight, "conv2d_grad_weight"},
                                                         {Pass::Train, "conv2d_train"}};
    for (const auto& [pass, name] : conv_benches) {
      benchmark::RegisterBenchmark((std::string(name) + "/" + layer).c_str(), BM_Conv, l, pass)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
    for (const Pass p : {Pass::Forward, Pass::GradInput, Pass::GradWeight}) {
      benchmark::RegisterBenchmark(("sgemm/" + layer + "_" + pass_name(p)).c_str(), BM_Sgemm, l, p)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

/// The kernels of a training step's conv ops, per layer, as context.
void add_kernel_context() {
  for (const Layer& l : kLayers) {
    Bench b;
    build_conv(b, l, Pass::Train);
    // Held in a variable: a range-for over a member of the temporary would dangle.
    const nlohmann::json report = nlohmann::json::parse(b.session->report());
    std::string all;
    for (const auto& note : report["kernels"]) {
      all += (all.empty() ? "" : "; ") + note.get<std::string>();
    }
    benchmark::AddCustomContext(std::string("conv_kernels_") + l.name, all);
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  try {
    benchmark::AddCustomContext("plexus", plx::runtime_info());
    add_kernel_context();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "conv_bench: %s\n", e.what());
    return 1;
  }
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
