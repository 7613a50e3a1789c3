// The pipeline bubble with balanced stages (docs/design.md "Pipelining": fill-drain idles
// (S-1)/(M+S-1) of the time), measured, next to sharded execution of the same program in
// the same run. Two stages of equal work (a chain of `kLayers` [kWidth x kWidth] matmul +
// relu layers each, then a mean loss in the last stage; SGD) on two devices, one core
// each on this 2-core machine, trained with M micro-batches per update. Each iteration is
// one session run of one weight update; the last run is traced (options.profile), and
// counters report:
//   bubble          1 - mean device busy fraction, busy = time inside forward / backward
//                   / update steps (receives that wait for the other device excluded);
//   bubble_formula  (S-1)/(M+S-1), the fill-drain bubble of S equal stages;
//   samples/s       training throughput (items_per_second).
// The trace's own cost (two clock reads per action) is included in every variant.
#include <benchmark/benchmark.h>
#include <plexus/plexus.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace {

constexpr int64_t kWidth = 256;
constexpr int64_t kBatch = 32;
constexpr int kLayers = 4;
constexpr int64_t kStages = 2;

struct Program {
  plx::Ir ir;
  plx::Stream x;
};

plx::Tensor layer_chain(plx::Ir& ir, plx::Tensor h, std::vector<plx::Tensor>& weights, int stage) {
  for (int l = 0; l < kLayers; ++l) {
    std::vector<float> w(static_cast<size_t>(kWidth * kWidth));
    for (size_t i = 0; i < w.size(); ++i) w[i] = (static_cast<float>((i * 7 + static_cast<size_t>(l)) % 13) - 6.0f) / 256.0f;
    weights.push_back(ir.variable<float>("w" + std::to_string(stage) + "_" + std::to_string(l), {kWidth, kWidth}, w));
    h = ir.relu(ir.matmul(h, weights.back()));
  }
  return h;
}

Program build() {
  Program p;
  auto [stream, x] = p.ir.h2d_stream("x", PLX_DTYPE_FLOAT32, {kBatch, kWidth});
  p.x = stream;
  std::vector<plx::Tensor> weights;
  plx::Tensor h;
  {
    plx::Block b1(p.ir, "B1");
    h = layer_chain(p.ir, x, weights, 0);
  }
  plx::Tensor loss;
  {
    plx::Block b2(p.ir, "B2");
    loss = p.ir.reduce_mean(layer_chain(p.ir, h, weights, 1));
  }
  const std::vector<plx::Tensor> grads = p.ir.autodiff(loss, weights);
  for (size_t i = 0; i < weights.size(); ++i) p.ir.scaled_add_(weights[i], grads[i], 1.0, -1e-3);
  return p;
}

void run_pipeline(benchmark::State& state, const char* strategy, const char* options) {
  const int64_t micro_batches = state.range(0);
  Program p = build();
  plx::Stages stages;
  stages.add({"B1"}, 0).add({"B2"}, 1);
  plx::SessionOptions opts;
  stages.apply(opts);
  opts.execution_strategy = strategy;
  opts.strategy_options = options;
  opts.gradient_accumulation = micro_batches;
  opts.profile = 1;
  plx::Session session(p.ir, opts);
  std::vector<float> x(static_cast<size_t>(micro_batches * kBatch * kWidth), 0.5f);
  const plx::HostArray in(p.x, x.data(), session.host_shape(p.x));
  session.run({in});  // warm-up: GEMM kernel choice, first touches
  for (auto _ : state) session.run({in});
  const nlohmann::json other = nlohmann::json::parse(session.trace())["otherData"];
  state.counters["bubble"] = other["bubble_fraction"].get<double>();
  state.counters["bubble_formula"] =
      static_cast<double>(kStages - 1) / static_cast<double>(micro_batches + kStages - 1);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * micro_batches * kBatch);
}

void BM_FillDrain(benchmark::State& state) { run_pipeline(state, "pipelined", "fill_drain"); }
void BM_OneFOneB(benchmark::State& state) { run_pipeline(state, "pipelined", ""); }
void BM_Sharded(benchmark::State& state) { run_pipeline(state, "sharded", ""); }

BENCHMARK(BM_FillDrain)->Arg(2)->Arg(4)->Arg(10)->Arg(20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_OneFOneB)->Arg(2)->Arg(4)->Arg(10)->Arg(20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Sharded)->Arg(2)->Arg(4)->Arg(10)->Arg(20)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
