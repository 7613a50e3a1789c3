// Remote buffer ops (core/ops/collective/remote.cpp): remote_load / remote_store with constant and
// tensor indices, their errors, and seed 001's listing 13.2 under in_sequence.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "core/ir/error.h"
#include "tests/error_of.h"
#include "core/ir/graph.h"
#include "core/session/session.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

template <class T>
std::vector<std::byte> bytes_of(const std::vector<T>& v) {
  std::vector<std::byte> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

ir::Attributes slot(ir::RemoteBufferId buffer, int64_t index = 0) {
  ir::Attributes a;
  a.set("buffer", int64_t{buffer});
  a.set("index", index);
  return a;
}

using plexus::test::error_of;

TEST(RemoteOps, LoadAndStoreWithConstantAndTensorIndices) {
  ir::Graph g;
  const ir::RemoteBufferId buffer = g.add_remote_buffer(ir::DType::Float32, {2}, 3);
  const ir::StreamId is = g.add_h2d_stream("i", ir::DType::Int32, {});
  const ir::StreamId xs = g.add_h2d_stream("x", ir::DType::Float32, {2});
  ir::Attributes by_tensor;
  by_tensor.set("buffer", int64_t{buffer});
  g.add_op("remote_store", {g.stream(xs).tensor, g.stream(is).tensor}, by_tensor);  // slot i <- x
  const ir::StreamId fixed = g.add_d2h_stream("slot2", g.add_op("remote_load", {}, slot(buffer, 2)).front());
  const ir::StreamId picked =
      g.add_d2h_stream("picked", g.add_op("remote_load", {g.stream(is).tensor}, by_tensor).front());
  session::SessionOptions opts;
  opts.device_iterations = 3;
  session::Session s(g, opts);
  std::vector<int32_t> indices = {2, 0, 1};
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, slot2(6), back(6);
  const runtime::HostArray in[2] = {{is, indices.data(), ir::DType::Int32, {3}}, {xs, x.data(), ir::DType::Float32, {3, 2}}};
  const runtime::HostArray out[2] = {{fixed, slot2.data(), ir::DType::Float32, {3, 2}},
                                     {picked, back.data(), ir::DType::Float32, {3, 2}}};
  s.run(in, out);
  EXPECT_EQ(back, x);                                             // each step reads what it stored
  EXPECT_EQ(slot2, (std::vector<float>{1, 2, 1, 2, 1, 2}));        // slot 2 was written at step 0
  EXPECT_EQ(s.memory_stats(0).remote_buffer_bytes, 3u * 2u * sizeof(float));
}

TEST(RemoteOps, ConstantIndexOutOfRangeIsABuildError) {
  ir::Graph g;
  const ir::RemoteBufferId buffer = g.add_remote_buffer(ir::DType::Float32, {2}, 2);
  const ir::Error e = error_of([&] { g.add_op("remote_load", {}, slot(buffer, 2)); });
  EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.what(), HasSubstr("index 2 is outside [0, 2) of remote buffer 0 (2 x float32[2])"));
  EXPECT_EQ(error_of([&] { g.add_op("remote_load", {}, slot(7)); }).code(), ir::ErrorCode::NotFound);
  EXPECT_EQ(g.num_ops(), 0u);
}

TEST(RemoteOps, TensorIndexOutOfRangeIsARunErrorNamingTheBuffer) {
  ir::Graph g;
  const ir::RemoteBufferId buffer = g.add_remote_buffer(ir::DType::Float32, {2}, 2);
  const ir::StreamId is = g.add_h2d_stream("i", ir::DType::Int32, {1});
  ir::Attributes by_tensor;
  by_tensor.set("buffer", int64_t{buffer});
  g.add_op("remote_load", {g.stream(is).tensor}, by_tensor);
  session::Session s(g, {});
  int32_t index = 5;
  const runtime::HostArray in{is, &index, ir::DType::Int32, {1}};
  const ir::Error e = error_of([&] { s.run(std::span(&in, 1), {}); });
  EXPECT_EQ(e.code(), ir::ErrorCode::Runtime);
  EXPECT_THAT(e.what(), HasSubstr("op 'remote_load#0' on remote buffer 0 (2 x float32[2]): index 5 is outside [0, 2)"));
  index = 1;
  s.run(std::span(&in, 1), {});  // and the session keeps working
}

TEST(RemoteOps, StoresMustMatchTheSlotAndRemoteVariablesNeedALoad) {
  ir::Graph g;
  const ir::RemoteBufferId buffer = g.add_remote_buffer(ir::DType::Float32, {2}, 1);
  const ir::TensorId wrong = g.add_variable("wrong", ir::DType::Float32, {3}, bytes_of(std::vector<float>(3)));
  ir::Error e = error_of([&] { g.add_op("remote_store", {wrong}, slot(buffer)); });
  EXPECT_EQ(e.code(), ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(e.what(), HasSubstr("must match the slots of remote buffer 0, float32[2]"));
  const ir::TensorId remote = g.add_remote_variable("r", ir::DType::Float32, {2}, bytes_of(std::vector<float>(2)), buffer,
                                                    0, std::nullopt, ir::RetrievalMode::OnePerGroup);
  e = error_of([&] { g.add_op("neg", {remote}, {}); });
  EXPECT_THAT(e.what(), HasSubstr("is the remote variable 'r', which lives in remote buffer 0: remote_load it first"));
  // Found by the C API sequence fuzzer: a device-to-host stream of a remote variable was
  // accepted, and creating a session over it failed with PLX_ERR_INTERNAL ("map::at").
  e = error_of([&] { g.add_d2h_stream("r_out", remote); });
  EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.what(), HasSubstr("device-to-host stream 'r_out': its tensor is the remote variable 'r', which lives in "
                                  "remote buffer 0: remote_load it first"));
}

// Seed 001, listing 13.2: two replicas, each its own group; every replica loads its remote
// variable, adds 1 in place and stores it back, in sequence. After one run every replica
// holds its initial values + 1.
TEST(RemoteOps, Seed001Listing13_2UnderInSequence) {
  ir::Graph g;
  g.set_replication_factor(2);
  std::vector<int32_t> v_h(64);
  std::iota(v_h.begin(), v_h.end(), 0);  // np.arange(0, 2 * 32).reshape((2, 32))
  const ir::ReplicaGrouping rg(2, 1, 1);  // group_size = R / num_groups
  g.begin_in_sequence();
  const ir::RemoteBufferId buffer = g.add_remote_buffer(ir::DType::Int32, {32}, 1);
  const ir::TensorId remote_v =
      g.add_remote_variable("v", ir::DType::Int32, {32}, bytes_of(v_h), buffer, 0, rg, ir::RetrievalMode::OnePerGroup);
  const ir::TensorId v = g.add_op("remote_load", {}, slot(buffer)).front();
  const ir::TensorId one = g.add_constant(ir::DType::Int32, {}, bytes_of(std::vector<int32_t>{1}));
  g.add_op("add_", {v, one}, {});             // v += 1
  g.add_op("remote_store", {v}, slot(buffer));  // no data dependence on the add: in_sequence orders it
  g.end_in_sequence();
  EXPECT_EQ(g.in_sequence_depth(), 0);
  EXPECT_THROW(g.end_in_sequence(), ir::Error);

  session::Session s(g, {});
  s.run({}, {});
  EXPECT_EQ(s.variable_shape(remote_v), (ir::Shape{2, 32}));
  std::vector<int32_t> after(64);
  s.read_variable(remote_v, std::as_writable_bytes(std::span(after)));
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(after[i], v_h[i] + 1) << i;
}

}  // namespace
}  // namespace plexus::ops::test
