// Sessions over several stages and devices (seed 003; docs/design.md "Pipelining"): strategies
// change the schedule, not the math; gradient accumulation; output modes; optimizer state
// offload; traces; errors at creation and during runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/ir/autodiff.h"
#include "core/ir/error.h"
#include "core/session/session.h"
#include "tests/runtime/test_graphs.h"
#include "tests/runtime/two_block_model.h"

namespace plexus::runtime {
namespace {

using ::testing::HasSubstr;
using testing::f32;
using session::OutputMode;
using session::Session;
using session::SessionOptions;

using testing::Data;
using testing::kBatch;
using testing::read;
using testing::train;
using testing::TwoBlockModel;

SessionOptions two_stages(const std::string& strategy, const std::string& strategy_options = "") {
  SessionOptions o;
  o.stages = {{{"B1"}, 0}, {{"B2"}, 1}};
  o.execution_strategy = strategy;
  o.strategy_options = strategy_options;
  o.device_iterations = 2;
  o.gradient_accumulation = 4;
  return o;
}

TEST(PipelinedSession, StrategiesChangeTheScheduleNotTheWeights) {
  TwoBlockModel m;
  SessionOptions one_device;
  one_device.stages = {{{"B1", "B2"}, 0}};
  one_device.device_iterations = 2;
  one_device.gradient_accumulation = 4;
  Session reference(m.g, one_device);
  const std::vector<float> reference_loss = train(reference, m, 3);
  EXPECT_EQ(reference.num_devices(), 1u);
  for (const auto& [strategy, options] : std::vector<std::pair<std::string, std::string>>{
           {"pipelined", ""}, {"pipelined", "fill_drain"}, {"sharded", ""}}) {
    SCOPED_TRACE(strategy + " " + options);
    Session s(m.g, two_stages(strategy, options));
    EXPECT_EQ(s.num_devices(), 2u);
    EXPECT_EQ(train(s, m, 3), reference_loss);  // same ops in the same order per micro-batch: bit for bit
    EXPECT_EQ(read(s, m.w1), read(reference, m.w1));
    EXPECT_EQ(read(s, m.w2), read(reference, m.w2));
  }
}

TEST(PipelinedSession, EveryPrefetchDepthTrainsTheSameWeights) {
  // Small batches are copied from the prefetch queues into the arena; with 22000 samples
  // x is 264000 bytes (>= kInPlaceMinBytes) and stage 0 reads it in place in its queue
  // buffers, holding each until its backward step (1F1B keeps 2 micro-batches in flight
  // on stage 0). With `skip`, stage 1 reads x too: it receives it from stage 0, which
  // alone takes it from the stream.
  for (int64_t batch : {kBatch, int64_t{22000}}) {
    for (bool skip : {false, true}) {
      SCOPED_TRACE("batch " + std::to_string(batch) + (skip ? ", x read by both stages" : ""));
      TwoBlockModel m(false, batch, skip);
      std::vector<std::vector<float>> weights;
      for (int64_t depth : {0, 1, 2, 4}) {
        SessionOptions o = two_stages("pipelined");
        o.prefetch_depth = depth;
        Session s(m.g, o);
        train(s, m, 2, batch);
        std::vector<float> w = read(s, m.w1);
        for (ir::TensorId t : {m.w2, m.w3}) {
          if (t < 0) continue;
          const std::vector<float> more = read(s, t);
          w.insert(w.end(), more.begin(), more.end());
        }
        weights.push_back(w);
        const size_t x_bytes = static_cast<size_t>(batch) * 3 * 4;
        if (batch > kBatch && depth > 0) {  // x is not in stage 0's arena
          SessionOptions copied = o;
          copied.prefetch_depth = 0;
          EXPECT_GE(Session(m.g, copied).memory_stats(0).arena_bytes, s.memory_stats(0).arena_bytes + x_bytes);
        }
      }
      for (size_t k = 1; k < weights.size(); ++k) EXPECT_EQ(weights[k], weights[0]) << "depth index " << k;
    }
  }
}

TEST(PipelinedSession, GradientAccumulationEqualsOneBigBatch) {
  // Mean loss over a micro-batch, gradients summed over 4 micro-batches and scaled once by
  // 1/4: the same update as one batch of 4x the samples.
  TwoBlockModel small(false, kBatch), big(false, 4 * kBatch);
  SessionOptions ga = two_stages("pipelined");
  ga.device_iterations = 1;
  Session accumulated(small.g, ga);
  SessionOptions plain;
  plain.stages = {{{"B1", "B2"}, 0}};
  Session whole(big.g, plain);
  train(accumulated, small, 5, kBatch);
  train(whole, big, 5, 4 * kBatch);
  const std::vector<float> a = read(accumulated, small.w1), b = read(whole, big.w1);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6f) << i;
  const std::vector<float> a2 = read(accumulated, small.w2), b2 = read(whole, big.w2);
  for (size_t i = 0; i < a2.size(); ++i) EXPECT_NEAR(a2[i], b2[i], 1e-6f) << i;
}

TEST(PipelinedSession, OutputModesShapeAndSelectTheResults) {
  TwoBlockModel m;
  SessionOptions all = two_stages("pipelined");
  all.device_iterations = 4;
  all.gradient_accumulation = 2;
  Session s_all(m.g, all);
  EXPECT_EQ(s_all.host_shape(m.x), (ir::Shape{8, kBatch, 3}));
  EXPECT_EQ(s_all.host_shape(m.loss), (ir::Shape{4, 2}));
  const std::vector<float> every = train(s_all, m, 1);

  auto with_mode = [&](OutputMode mode, int64_t period, const ir::Shape& shape) {
    SessionOptions o = all;
    o.output_mode = mode;
    o.output_return_period = period;
    Session s(m.g, o);
    EXPECT_EQ(s.host_shape(m.loss), shape);
    return train(s, m, 1);
  };
  EXPECT_EQ(with_mode(OutputMode::Final, 1, {}), std::vector<float>{every.back()});
  EXPECT_EQ(with_mode(OutputMode::EveryN, 2, {2, 2}), (std::vector<float>{every[2], every[3], every[6], every[7]}));
  float sum = 0;
  for (float v : every) sum += v;
  const std::vector<float> summed = with_mode(OutputMode::Sum, 1, {});
  EXPECT_NEAR(summed[0], sum, 1e-5f);
}

TEST(PipelinedSession, InferencePipelinesDeviceIterations) {
  ir::Graph g;
  const ir::StreamId x = g.add_h2d_stream("x", ir::DType::Float32, {2});
  g.begin_block("B1", 0);
  const ir::TensorId a = g.add_op("neg", {g.stream(x).tensor}, {}).front();
  g.end_block();
  g.begin_block("B2", 1);
  const ir::TensorId two = g.add_constant(ir::DType::Float32, {}, f32({2.0f}));
  const ir::StreamId y = g.add_d2h_stream("y", g.add_op("mul", {a, two}, {}).front());
  g.end_block();
  SessionOptions o;  // auto-staging: one stage per block on its device; pipelined by default
  o.device_iterations = 3;
  Session s(g, o);
  EXPECT_EQ(s.strategy_name(), "pipelined");
  EXPECT_EQ(s.micro_batches(), 3);
  std::vector<float> in{1, 2, 3, 4, 5, 6}, out(6);
  const HostArray hin{x, in.data(), ir::DType::Float32, {3, 2}};
  const HostArray hout{y, out.data(), ir::DType::Float32, {3, 2}};
  s.run(std::span(&hin, 1), std::span(&hout, 1));
  EXPECT_EQ(out, (std::vector<float>{-2, -4, -6, -8, -10, -12}));
}

TEST(PipelinedSession, FewerMicroBatchesThanStagesIsAnErrorAtCreation) {
  TwoBlockModel m;
  SessionOptions o = two_stages("pipelined");
  o.gradient_accumulation = 1;
  EXPECT_THAT(
      [&] {
        try {
          Session s(m.g, o);
        } catch (const ir::Error& e) {
          return std::string(e.what());
        }
        return std::string("no error");
      }(),
      HasSubstr("at least as many micro-batches"));
  o.execution_strategy = "sharded";  // one micro-batch at a time: any count works
  Session sharded(m.g, o);
  train(sharded, m, 1);
}

TEST(PipelinedSession, PlacementErrorsNameTheBlock) {
  TwoBlockModel m;
  SessionOptions o;
  o.stages = {{{"B1"}, 0}};
  try {
    Session s(m.g, o);
    FAIL();
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("block 'B2' is in no stage"));
  }
  o.stages = {{{"B1"}, 0}, {{"B3"}, 1}};
  try {
    Session s(m.g, o);
    FAIL();
  } catch (const ir::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("names block 'B3', which the IR does not have"));
  }
}

TEST(PipelinedSession, OffloadedOptimizerStateTrainsTheSameAndLeavesTheDevices) {
  TwoBlockModel m(true);
  SessionOptions o = two_stages("pipelined");
  Session on_device(m.g, o);
  o.offload_optimizer_state = true;
  Session offloaded(m.g, o);
  EXPECT_EQ(train(offloaded, m, 3), train(on_device, m, 3));
  EXPECT_EQ(read(offloaded, m.w1), read(on_device, m.w1));
  // Each stage's AdamW state: m and v of its weight plus the step counter.
  const size_t stage0_state = 2 * 15 * 4 + 4, stage1_state = 2 * 10 * 4 + 4;
  EXPECT_EQ(offloaded.memory_stats(0).offloaded_bytes, stage0_state);
  EXPECT_EQ(offloaded.memory_stats(1).offloaded_bytes, stage1_state);
  EXPECT_EQ(on_device.memory_stats(0).variable_bytes - offloaded.memory_stats(0).variable_bytes, stage0_state);
  EXPECT_EQ(on_device.memory_stats(1).variable_bytes - offloaded.memory_stats(1).variable_bytes, stage1_state);
  const ir::TensorId moment = *m.g.find_named("w1.m");
  EXPECT_EQ(offloaded.variable_storage(moment).remote_bytes, 60u);
  EXPECT_EQ(read(offloaded, moment), read(on_device, moment));
}

TEST(PipelinedSession, TraceHasEveryStepOnItsDeviceTrack) {
  TwoBlockModel m;
  SessionOptions o = two_stages("pipelined", "fill_drain");
  o.profile = true;
  Session s(m.g, o);
  train(s, m, 1);
  const RunTrace trace = s.last_trace();
  ASSERT_EQ(trace.devices.size(), 2u);
  const nlohmann::json j = nlohmann::json::parse(trace.to_json());
  std::map<std::pair<int, std::string>, int> count;  // (device, category) -> spans
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") ++count[{e["tid"].get<int>(), e["cat"].get<std::string>()}];
  }
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ((count[{d, "forward"}]), 8) << d;  // 2 iterations x 4 micro-batches
    EXPECT_EQ((count[{d, "backward"}]), 8) << d;
    EXPECT_EQ((count[{d, "update"}]), 2) << d;
    EXPECT_GT((count[{d, "transfer"}]), 0) << d;
  }
  for (double busy : trace.busy_fractions()) {
    EXPECT_GT(busy, 0.0);
    EXPECT_LE(busy, 1.0);
  }
  EXPECT_GE(j["otherData"]["bubble_fraction"].get<double>(), 0.0);
}

TEST(PipelinedSession, AFailingStageWakesTheOtherDeviceAndTheSessionStaysUsable) {
  TwoBlockModel m;
  Session s(m.g, two_stages("pipelined"));
  Data d(8, kBatch);
  d.labels[5] = 9;  // micro-batch 1: out of range for 2 classes, fails in stage 1 (B2)
  std::vector<float> loss(8);
  const std::vector<HostArray> in{{m.x, d.x.data(), ir::DType::Float32, s.host_shape(m.x)},
                                  {m.labels, d.labels.data(), ir::DType::Int32, s.host_shape(m.labels)}};
  const HostArray out{m.loss, loss.data(), ir::DType::Float32, s.host_shape(m.loss)};
  try {
    s.run(in, std::span(&out, 1));
    FAIL();
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::Runtime);
    EXPECT_THAT(e.what(), HasSubstr("device 1"));
    EXPECT_THAT(e.what(), HasSubstr("label 9"));
  }
  d.labels[5] = 1;
  s.run(in, std::span(&out, 1));
  for (float l : loss) EXPECT_GT(l, 0.0f);
}

}  // namespace
}  // namespace plexus::runtime
