// The device program (core/runtime/device_program.cpp): step lists built from a compiled
// program and a schedule, run on every hosted replica's device; profiling spans; the
// primary error of a failed run.
#include "core/runtime/device_program.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/ir/error.h"
#include "tests/runtime/compiled_graph.h"
#include "tests/runtime/test_graphs.h"

namespace plexus::runtime {
namespace {

using testing::f32;

// The Accumulator graph on R = 2 hosted replicas, one device each.
struct Fixture {
  testing::Accumulator m{2};
  compile::Program program = testing::compile_one_stage(m.graph);
  ReplicaStorage storage{m.graph, program, {0, 2}, nullptr, false};
  StreamBinding streams{m.graph, 2, 0, 1, false, false, {}};
  std::vector<streams::HostArrayLayout> layouts{
      streams::HostArrayLayout::input({.replicas = 2}, ir::DType::Float32, {2}),
      streams::HostArrayLayout::output({.replicas = 2}, false, ir::DType::Float32, {2})};
  std::vector<std::unique_ptr<plugin_host::Collectives>> collectives;

  DeviceProgram make(bool profile) {
    return DeviceProgram({m.graph, program, storage, streams, collectives, nullptr, {0, 2}, 1, profile, false},
                         testing::one_stage_schedule(program), 1);
  }
};

TEST(DeviceProgram, RunsEveryReplicasStepsOnItsDevice) {
  Fixture f;
  DeviceProgram p = f.make(false);
  f.storage.load_initial_values();
  float x[4] = {1, 2, 10, 20}, y[4] = {};
  RunRequest r;
  r.inputs = {{f.m.x_stream, x, ir::DType::Float32, {2, 2}}};
  r.outputs = {{f.m.y_stream, y, ir::DType::Float32, {2, 2}}};
  f.streams.bind(r, f.layouts);
  const auto errors = p.run();
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(primary_error(errors), nullptr);
  EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{2, 4, 20, 40}));
  EXPECT_EQ(testing::floats({f.storage.variable_buffer(f.m.acc, 1), f.storage.variable_buffer(f.m.acc, 1) + 8}),
            (std::vector<float>{10, 20}));
}

TEST(DeviceProgram, ProfilingRecordsAStepSpanPerDevice) {
  Fixture f;
  DeviceProgram p = f.make(true);
  float x[4] = {}, y[4] = {};
  RunRequest r;
  r.inputs = {{f.m.x_stream, x, ir::DType::Float32, {2, 2}}};
  r.outputs = {{f.m.y_stream, y, ir::DType::Float32, {2, 2}}};
  f.streams.bind(r, f.layouts);
  p.run();
  const auto spans = p.take_spans();
  ASSERT_EQ(spans.size(), 2u);
  for (const auto& device : spans) {
    ASSERT_FALSE(device.empty());
    EXPECT_EQ(device.back().kind, SpanKind::Forward);
    EXPECT_LE(device.back().start_ns, device.back().end_ns);
  }
  EXPECT_TRUE(p.take_spans()[0].empty());  // moved out
}

TEST(DeviceProgram, PrimaryErrorSkipsCancellationsCausedByAnotherDevice) {
  const auto cancelled = std::make_exception_ptr(ir::Error(ir::ErrorCode::Cancelled, "woken"));
  const auto failed = std::make_exception_ptr(ir::Error(ir::ErrorCode::Runtime, "broke"));
  EXPECT_EQ(primary_error({nullptr, cancelled, failed}), failed);
  EXPECT_EQ(primary_error({cancelled, nullptr}), cancelled);
  EXPECT_EQ(primary_error({nullptr, nullptr}), nullptr);
}

}  // namespace
}  // namespace plexus::runtime
