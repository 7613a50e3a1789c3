// Replica storage (core/runtime/replica_storage.cpp): devices per hosted replica, initial
// values, where each variable lives, and memory figures.
#include "core/runtime/replica_storage.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "core/ir/error.h"
#include "tests/runtime/compiled_graph.h"
#include "tests/runtime/test_graphs.h"

namespace plexus::runtime {
namespace {

using ::testing::HasSubstr;
using testing::f32;

std::vector<float> at(const std::byte* p, size_t n) {
  std::vector<float> out(n);
  std::memcpy(out.data(), p, n * sizeof(float));
  return out;
}

TEST(ReplicaStorage, HostsOneDevicePerHostedReplicaWithThePlannedArena) {
  testing::Accumulator m(4);
  const compile::Program program = testing::compile_one_stage(m.graph);
  ReplicaStorage storage(m.graph, program, {2, 2}, nullptr, false);
  ASSERT_EQ(storage.num_devices(), 2u);
  EXPECT_EQ(storage.device(1).index(), 1);
  const DeviceMemoryStats stats = storage.memory_stats(1);
  EXPECT_EQ(stats.arena_bytes, program.devices[0].arena_bytes);
  EXPECT_EQ(stats.variable_bytes, program.devices[0].persistent_bytes);
  EXPECT_EQ(stats.offloaded_bytes, 0u);
}

TEST(ReplicaStorage, LoadsInitialValuesIntoEveryHostedReplica) {
  ir::Graph g;
  g.set_replication_factor(2);
  const ir::TensorId v = g.add_variable("v", ir::DType::Float32, {3}, f32({1, 2, 3}));
  const ir::StreamId x = g.add_h2d_stream("x", ir::DType::Float32, {3});
  g.add_d2h_stream("y", g.add_op("add", {v, g.stream(x).tensor}, {}).front());
  const compile::Program program = testing::compile_one_stage(g);
  ReplicaStorage storage(g, program, {0, 2}, nullptr, false);
  storage.load_initial_values();
  for (int64_t r = 0; r < 2; ++r) EXPECT_EQ(at(storage.variable_buffer(v, r), 3), (std::vector<float>{1, 2, 3}));
  // Each replica has storage of its own.
  EXPECT_NE(storage.variable_buffer(v, 0), storage.variable_buffer(v, 1));
  EXPECT_EQ(storage.variable_buffer(v, 0),
            storage.device(0).arena().data() + program.devices[0].persistent_offset.at(v));
}

TEST(ReplicaStorage, AMissingDeviceIsNamed) {
  testing::Accumulator m;
  const compile::Program program = testing::compile_one_stage(m.graph);
  ReplicaStorage storage(m.graph, program, {0, 1}, nullptr, false);
  try {
    storage.memory_stats(3);
    ADD_FAILURE() << "no error";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::NotFound);
    EXPECT_THAT(e.what(), HasSubstr("device 3 does not exist (the session has 1)"));
  }
}

}  // namespace
}  // namespace plexus::runtime
