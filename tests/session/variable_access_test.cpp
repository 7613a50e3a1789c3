// Variable access (core/session/variable_access.cpp): reads and writes through the replica
// layout, groups, remote slots, and bad arguments named.
#include "core/session/variable_access.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/ir/error.h"
#include "tests/runtime/compiled_graph.h"
#include "tests/runtime/test_graphs.h"

namespace plexus::session {
namespace {

using ::testing::HasSubstr;
using runtime::testing::f32;
using runtime::testing::floats;
using runtime::HostedReplicas;
using runtime::ReplicaStorage;

// Variable "v" [2] = {1, 2} on R = 2 replicas, one remote buffer of 2 slots of [3].
struct Fixture {
  ir::Graph g;
  ir::TensorId v;
  ir::RemoteBufferId buffer;
  compile::Program program;
  std::unique_ptr<ReplicaStorage> storage;
  std::unique_ptr<VariableAccess> access;

  Fixture() {
    g.set_replication_factor(2);
    v = g.add_variable("v", ir::DType::Float32, {2}, f32({1, 2}));
    buffer = g.add_remote_buffer(ir::DType::Float32, {3}, 2);
    const ir::StreamId x = g.add_h2d_stream("x", ir::DType::Float32, {2});
    g.add_d2h_stream("y", g.add_op("add", {v, g.stream(x).tensor}, {}).front());
    program = runtime::testing::compile_one_stage(g);
    storage = std::make_unique<ReplicaStorage>(g, program, HostedReplicas{0, 2}, nullptr, false);
    storage->load_initial_values();
    access = std::make_unique<VariableAccess>(g, program, HostedReplicas{0, 2}, 1, *storage, nullptr,
                                              []() -> plugin_host::Collectives& { throw std::logic_error("not needed"); });
  }
};

template <class F>
std::string error_of(F body) {
  try {
    body();
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(VariableAccess, WritesEveryHostedReplicaAndReadsTheValueBack) {
  Fixture f;
  EXPECT_EQ(f.access->variable_shape(f.v), (ir::Shape{2}));
  std::vector<std::byte> out(8);
  f.access->read_variable(f.v, out);
  EXPECT_EQ(floats(out), (std::vector<float>{1, 2}));
  f.access->write_variable(f.v, f32({5, 6}));
  f.access->read_variable(f.v, out);
  EXPECT_EQ(floats(out), (std::vector<float>{5, 6}));
  EXPECT_EQ(floats({f.storage->variable_buffer(f.v, 1), f.storage->variable_buffer(f.v, 1) + 8}),
            (std::vector<float>{5, 6}));
  EXPECT_EQ(f.access->variable_groups(f.v), 1);
  f.access->read_variable_groups(f.v, out);
  EXPECT_EQ(floats(out), (std::vector<float>{5, 6}));
  const VariableStorage s = f.access->variable_storage(f.v);
  EXPECT_EQ(s.device_bytes, 8u);
  EXPECT_EQ(s.remote_bytes, 0u);
}

TEST(VariableAccess, RemoteSlotsHoldOneRowPerHostedReplica) {
  Fixture f;
  f.access->write_remote_slot(f.buffer, 1, f32({1, 2, 3, 4, 5, 6}));
  std::vector<std::byte> out(24);
  f.access->read_remote_slot(f.buffer, 1, out);
  EXPECT_EQ(floats(out), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  f.access->read_remote_slot(f.buffer, 0, out);
  EXPECT_EQ(floats(out), (std::vector<float>(6, 0.0f)));
}

TEST(VariableAccess, BadArgumentsAreNamed) {
  Fixture f;
  std::vector<std::byte> small(4);
  EXPECT_THAT(error_of([&] { f.access->read_variable(f.v, small); }),
              HasSubstr("variable 'v': host buffer is 4 bytes, expected 8 for float32[2]"));
  const ir::TensorId x = f.g.stream(0).tensor;
  EXPECT_THAT(error_of([&] { f.access->read_variable(x, small); }), HasSubstr("tensor 'x' is not a variable"));
  EXPECT_THAT(error_of([&] { f.access->read_remote_slot(f.buffer, 2, small); }),
              HasSubstr("slot 2 is not in [0, 2)"));
  EXPECT_THAT(error_of([&] { f.access->read_remote_slot(f.buffer, 0, small); }),
              HasSubstr("host buffer is 4 bytes, expected 24 ([hosted replicas] + slot shape)"));
}

TEST(VariableAccess, HoldIsRecursiveOnTheHoldingThread) {
  Fixture f;
  const auto hold = f.access->hold();
  std::vector<std::byte> out(8);
  f.access->read_variable(f.v, out);  // does not deadlock
  EXPECT_EQ(floats(out), (std::vector<float>{1, 2}));
}

}  // namespace
}  // namespace plexus::session
