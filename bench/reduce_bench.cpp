// reduce_bench: bandwidth of reduce_sum / reduce_mean over all axes but the channel of an
// NCHW tensor (the conv bias gradient, axes {0,2,3}) and of max_pool2d 2x2 (stride 2, the
// seeds' MaxPool2d(2)) forward and gradient on the seed CNNs' conv outputs, next to memcpy
// of the same bytes in the same run (bench/memcpy_baseline.h):
//
//   seed002_conv:   [64,32,26,26]  (samples/distributed_training, batch 64)  5.3 MiB
//   seed003_layer1: [40,10,24,24]  (samples/mnist_pipeline, batch 40)        0.9 MiB
//   seed003_layer2: [40,20,8,8]                                              0.2 MiB
//
// Through the public C++ API: a session whose step is one reduction of a variable, run with
// device_iterations 10 so the per-run hand-over is amortised. Bytes per second counts the
// bytes of the conv output read (memcpy's counts the bytes copied, each read once and
// written once); max_pool2d_grad also reads dy (a quarter of that) and writes dx (as many).
//
//   build/bench/reduce_bench --benchmark_min_time=0.3
#include <benchmark/benchmark.h>
#include <plexus/plexus.hpp>

#include "bench/memcpy_baseline.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int64_t kDeviceIterations = 10;

/// A conv output of a seed CNN, NCHW.
struct Layer {
  const char* name;
  plx::Shape shape;
  int64_t bytes() const { return plx::numel(shape) * static_cast<int64_t>(sizeof(float)); }
};

const Layer kLayers[] = {{"seed002_conv", {64, 32, 26, 26}},
                         {"seed003_layer1", {40, 10, 24, 24}},
                         {"seed003_layer2", {40, 20, 8, 8}}};

/// Uniform [-1, 1) values from a fixed seed.
std::vector<float> random_data(const plx::Shape& shape) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(plx::numel(shape)));
  for (float& x : v) x = dist(rng);
  return v;
}

/// Compiles `ir` (no inputs) with kDeviceIterations steps per run and times its runs,
/// counting `bytes` per step.
void time_runs(benchmark::State& state, const plx::Ir& ir, size_t bytes) {
  plx::SessionOptions opts;
  opts.device_iterations = kDeviceIterations;
  plx::Session session(ir, opts);
  session.run({});  // warm-up: first touch of the arena
  for (auto _ : state) session.run({});
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kDeviceIterations * bytes));
}

/// reduce_sum (or reduce_mean) of the layer's tensor over axes {0,2,3}: input bytes per second.
void BM_Reduce(benchmark::State& state, const Layer& l, bool mean) {
  plx::Ir ir;
  const plx::Tensor x = ir.variable<float>("x", l.shape, random_data(l.shape));
  if (mean) {
    ir.reduce_mean(x, {0, 2, 3});
  } else {
    ir.reduce_sum(x, {0, 2, 3});
  }
  time_runs(state, ir, l.bytes());
}

/// max_pool2d 2x2 of the layer's tensor x, or (grad) max_pool2d_grad(x, dy): x's bytes per second.
void BM_MaxPool(benchmark::State& state, const Layer& l, bool grad) {
  plx::Ir ir;
  const plx::Tensor x = ir.variable<float>("x", l.shape, random_data(l.shape));
  if (grad) {
    const plx::Shape y_shape{l.shape[0], l.shape[1], l.shape[2] / 2, l.shape[3] / 2};
    const plx::Tensor dy = ir.variable<float>("dy", y_shape, random_data(y_shape));
    ir.op1("max_pool2d_grad", {x, dy}, {{"kernel", plx::Shape{2, 2}}});
  } else {
    ir.max_pool2d(x, {2, 2});
  }
  time_runs(state, ir, l.bytes());
}

/// Per layer: memcpy of its bytes, reduce_sum and reduce_mean over axes {0,2,3}, then
/// max_pool2d 2x2 forward and gradient.
void register_all() {
  for (const Layer& l : kLayers) {
    const std::string layer = l.name;
    benchmark::RegisterBenchmark(("memcpy/" + layer).c_str(), bench::BM_Memcpy)->Arg(l.bytes());
    benchmark::RegisterBenchmark(("reduce_sum_0_2_3/" + layer).c_str(), BM_Reduce, l, false)->UseRealTime();
    benchmark::RegisterBenchmark(("reduce_mean_0_2_3/" + layer).c_str(), BM_Reduce, l, true)->UseRealTime();
    benchmark::RegisterBenchmark(("max_pool2d_2x2/" + layer).c_str(), BM_MaxPool, l, false)->UseRealTime();
    benchmark::RegisterBenchmark(("max_pool2d_grad_2x2/" + layer).c_str(), BM_MaxPool, l, true)->UseRealTime();
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("plexus", plx::runtime_info());
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
