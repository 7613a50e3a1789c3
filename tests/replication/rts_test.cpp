// Replicated tensor sharding through sessions (seed 000 17.2; docs/design.md "Semantics"): sharded and
// remote sharded variables, their shard domains with groupings, all-gather back to the full
// shape, reduce-scatter into shards, write -> read round trips under both retrieval modes,
// and the device bytes RTS saves.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "core/ir/error.h"
#include "core/ir/graph.h"
#include "core/session/session.h"

namespace plexus::replication {
namespace {

using ::testing::HasSubstr;

std::vector<std::byte> bytes_of(const std::vector<float>& v) {
  std::vector<std::byte> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Group k's value: 100 * k + i for element i.
std::vector<float> group_values(int64_t groups, int64_t numel) {
  std::vector<float> v;
  for (int64_t k = 0; k < groups; ++k) {
    for (int64_t i = 0; i < numel; ++i) v.push_back(100.0f * static_cast<float>(k) + static_cast<float>(i));
  }
  return v;
}

std::vector<float> read(const session::Session& s, ir::TensorId t) {
  std::vector<float> out(static_cast<size_t>(ir::numel(s.variable_shape(t))));
  s.read_variable(t, std::as_writable_bytes(std::span(out)));
  return out;
}

// Runs once and returns the d2h stream `out` for every replica.
std::vector<float> run_and_fetch(session::Session& s, ir::StreamId out, int64_t per_replica) {
  std::vector<float> host(static_cast<size_t>(s.replication_factor() * per_replica));
  const runtime::HostArray array{out, host.data(), ir::DType::Float32, s.host_shape(out)};
  s.run({}, std::span(&array, 1));
  return host;
}

TEST(Rts, ShardsWithAGroupingAllGatherToEachGroupsFullTensor) {
  // R=4, groups of 2 ({0,1}, {2,3}), 7 elements: shards of ceil(7/2) = 4, one padded.
  ir::Graph g;
  g.set_replication_factor(4);
  const ir::ReplicaGrouping pairs(4, 2, 1);
  const ir::TensorId w = g.add_replica_sharded_variable("w", ir::DType::Float32, {7}, bytes_of(group_values(2, 7)),
                                                        pairs, ir::RetrievalMode::OnePerGroup, 0);
  EXPECT_EQ(g.tensor(w).shape, (ir::Shape{4}));
  const ir::TensorId full = g.add_op("replicated_all_gather", {w}, {}).front();
  EXPECT_EQ(g.tensor(full).shape, (ir::Shape{7}));  // the original shape, padding gone
  const ir::StreamId out = g.add_d2h_stream("full", full);
  session::Session s(g, {});
  const std::vector<float> fetched = run_and_fetch(s, out, 7);
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t i = 0; i < 7; ++i) {
      EXPECT_EQ(fetched[static_cast<size_t>(r * 7 + i)], 100.0f * static_cast<float>(r / 2) + static_cast<float>(i));
    }
  }
  EXPECT_EQ(s.variable_shape(w), (ir::Shape{2, 7}));
  EXPECT_EQ(read(s, w), group_values(2, 7));
}

TEST(Rts, ShardOverSplitsAGroupIntoSeveralShardDomains) {
  // R=4, one group of 4, shard_over 2: domains {0,1} and {2,3} each hold a full copy.
  ir::Graph g;
  g.set_replication_factor(4);
  const ir::TensorId w = g.add_replica_sharded_variable("w", ir::DType::Float32, {5}, bytes_of(group_values(1, 5)),
                                                        std::nullopt, ir::RetrievalMode::AllReplicas, 2);
  EXPECT_EQ(g.tensor(w).shape, (ir::Shape{3}));
  const ir::StreamId out = g.add_d2h_stream("full", g.add_op("replicated_all_gather", {w}, {}).front());
  session::Session s(g, {});
  const std::vector<float> fetched = run_and_fetch(s, out, 5);
  for (int64_t r = 0; r < 4; ++r) {
    EXPECT_EQ(std::vector<float>(fetched.begin() + r * 5, fetched.begin() + (r + 1) * 5), group_values(1, 5)) << r;
  }
  EXPECT_EQ(s.variable_shape(w), (ir::Shape{4, 5}));
  try {
    ir::Graph bad;
    bad.set_replication_factor(4);
    bad.add_replica_sharded_variable("w", ir::DType::Float32, {5}, bytes_of(group_values(1, 5)), std::nullopt,
                                     ir::RetrievalMode::OnePerGroup, 3);
    FAIL();
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidGrouping);
    EXPECT_THAT(e.what(), HasSubstr("shard_over 3 must divide the group size"));
  }
}

// write -> read returns what was written, for device and remote sharded variables and
// plain remote variables, under both retrieval modes. With all_replicas each replica of a
// sharded variable stores its shard of its own row, so rows of one shard domain (here the
// pairs) are written alike.
TEST(Rts, WriteThenReadRoundTripsUnderBothRetrievalModes) {
  for (const ir::RetrievalMode mode : {ir::RetrievalMode::OnePerGroup, ir::RetrievalMode::AllReplicas}) {
    ir::Graph g;
    g.set_replication_factor(4);
    const ir::ReplicaGrouping pairs(4, 2, 1);
    const ir::TensorId sharded = g.add_replica_sharded_variable("sharded", ir::DType::Float32, {2, 5},
                                                                bytes_of(group_values(2, 10)), pairs, mode, 0);
    const ir::RemoteBufferId shards = g.add_remote_buffer(ir::DType::Float32, {5}, 2);
    const ir::TensorId remote_sharded = g.add_remote_replica_sharded_variable(
        "remote_sharded", ir::DType::Float32, {10}, bytes_of(group_values(2, 10)), shards, 1, pairs, mode, 0);
    const ir::RemoteBufferId slots = g.add_remote_buffer(ir::DType::Float32, {3}, 1);
    const ir::TensorId remote = g.add_remote_variable("remote", ir::DType::Float32, {3}, bytes_of(group_values(2, 3)),
                                                      slots, 0, pairs, mode);
    session::Session s(g, {});
    for (const ir::TensorId t : {sharded, remote_sharded, remote}) {
      const ir::Shape shape = s.variable_shape(t);
      EXPECT_EQ(shape[0], mode == ir::RetrievalMode::AllReplicas ? 4 : 2);
      const int64_t row = ir::numel(shape) / shape[0];
      std::vector<float> written;
      for (int64_t r = 0; r < shape[0]; ++r) {
        const int64_t domain = mode == ir::RetrievalMode::AllReplicas ? r / 2 : r;
        for (int64_t i = 0; i < row; ++i) written.push_back(1000.0f + 100.0f * static_cast<float>(domain) + static_cast<float>(i));
      }
      if (mode == ir::RetrievalMode::OnePerGroup) {
        EXPECT_EQ(read(s, t), (t == remote ? group_values(2, 3) : group_values(2, 10)));
      }
      s.write_variable(t, std::as_bytes(std::span(written)));
      EXPECT_EQ(read(s, t), written) << g.tensor(t).name;
    }
  }
}

TEST(Rts, ACollectiveOnAShardMustUseItsShardDomain) {
  ir::Graph g;
  g.set_replication_factor(4);
  const ir::TensorId w = g.add_replica_sharded_variable("w", ir::DType::Float32, {8}, bytes_of(group_values(2, 8)),
                                                        ir::ReplicaGrouping(4, 2, 1), ir::RetrievalMode::OnePerGroup, 0);
  ir::Attributes other;
  other.set("group_size", int64_t{4});
  try {
    g.add_op("replicated_all_gather", {w}, other);
    FAIL();
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidGrouping);
    EXPECT_THAT(e.what(), HasSubstr("replica-sharded over ReplicaGrouping(R=4, group_size=2, stride=1)"));
  }
  ir::Attributes same;
  same.set("group_size", int64_t{2});
  EXPECT_EQ(g.tensor(g.add_op("replicated_all_gather", {w}, same).front()).shape, (ir::Shape{8}));
}

TEST(Rts, RemoteShardsLoadGatherUpdateAndStoreBack) {
  // seed 000's W1: a remote replica-sharded variable, loaded, all-gathered, updated on its
  // shard with a reduce-scattered gradient, stored back with remote_store.
  ir::Graph g;
  g.set_replication_factor(2);
  const ir::RemoteBufferId buffer = g.add_remote_buffer(ir::DType::Float32, {3}, 1);
  const ir::TensorId var = g.add_remote_replica_sharded_variable("w1", ir::DType::Float32, {5},
                                                                 bytes_of(group_values(1, 5)), buffer, 0,
                                                                 std::nullopt, ir::RetrievalMode::OnePerGroup, 0);
  ir::Attributes load;
  load.set("buffer", int64_t{buffer});
  const ir::TensorId shard = g.add_op("remote_load", {}, load).front();
  ASSERT_TRUE(g.tensor(shard).sharding.has_value());
  const ir::TensorId full = g.add_op("replicated_all_gather", {shard}, {}).front();
  const ir::StreamId out = g.add_d2h_stream("full", full);
  // A "gradient" of ones everywhere, mean-reduced into shards: every element moves by -lr.
  std::vector<float> ones(5, 1.0f);
  const ir::TensorId grad = g.add_constant(ir::DType::Float32, {5}, bytes_of(ones));
  ir::Attributes mean;
  mean.set("op", std::string("mean"));
  const ir::TensorId grad_shard = g.add_op("replicated_reduce_scatter", {grad}, mean).front();
  EXPECT_EQ(g.tensor(grad_shard).sharding, g.tensor(shard).sharding);
  ir::Attributes sgd;
  sgd.set("b", -0.5);
  const ir::TensorId updated = g.add_op("scaled_add_", {shard, grad_shard}, sgd).front();
  g.add_op("remote_store", {updated}, load);
  session::Session s(g, {});
  EXPECT_EQ(run_and_fetch(s, out, 5), (std::vector<float>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4}));
  EXPECT_EQ(read(s, var), (std::vector<float>{-0.5f, 0.5f, 1.5f, 2.5f, 3.5f}));
  EXPECT_EQ(run_and_fetch(s, out, 5), (std::vector<float>{-0.5f, 0.5f, 1.5f, 2.5f, 3.5f, -0.5f, 0.5f, 1.5f, 2.5f, 3.5f}));
}

TEST(Rts, HalvesEachReplicasBytesAtTwoReplicas) {
  // seed 000's W0 and W1 at R=2: sharded, each replica keeps half of every weight.
  const std::vector<float> w0(784 * 32, 0.5f), w1(32 * 10, 0.25f);
  ir::Graph plain, sharded;
  plain.set_replication_factor(2);
  sharded.set_replication_factor(2);
  const ir::TensorId p0 = plain.add_variable("W0", ir::DType::Float32, {784, 32}, bytes_of(w0));
  const ir::RemoteBufferId pb = plain.add_remote_buffer(ir::DType::Float32, {32, 10}, 1);
  const ir::TensorId p1 = plain.add_remote_variable("W1", ir::DType::Float32, {32, 10}, bytes_of(w1), pb, 0,
                                                    std::nullopt, ir::RetrievalMode::OnePerGroup);
  const ir::TensorId s0 = sharded.add_replica_sharded_variable("W0", ir::DType::Float32, {784, 32}, bytes_of(w0),
                                                               std::nullopt, ir::RetrievalMode::OnePerGroup, 0);
  const ir::RemoteBufferId sb = sharded.add_remote_buffer(ir::DType::Float32, {160}, 1);
  const ir::TensorId s1 = sharded.add_remote_replica_sharded_variable(
      "W1", ir::DType::Float32, {32, 10}, bytes_of(w1), sb, 0, std::nullopt, ir::RetrievalMode::OnePerGroup, 0);
  session::Session a(plain, {}), b(sharded, {});
  EXPECT_EQ(b.variable_storage(s0).device_bytes * 2, a.variable_storage(p0).device_bytes);
  EXPECT_EQ(b.variable_storage(s1).remote_bytes * 2, a.variable_storage(p1).remote_bytes);
  EXPECT_EQ(b.variable_storage(s0).shard_over, 2);
  for (size_t d = 0; d < 2; ++d) {
    EXPECT_EQ(b.memory_stats(d).variable_bytes * 2, a.memory_stats(d).variable_bytes);
    EXPECT_EQ(b.memory_stats(d).remote_buffer_bytes * 2, a.memory_stats(d).remote_buffer_bytes);
    EXPECT_EQ(b.memory_stats(d).remote_buffer_bytes, 160u * sizeof(float));
  }
  EXPECT_EQ(read(b, s0), w0);  // reading back returns the full, unpadded tensors
  EXPECT_EQ(read(b, s1), w1);
}

TEST(Rts, RemoteSlotsMustHoldTheShard) {
  ir::Graph g;
  g.set_replication_factor(2);
  const ir::RemoteBufferId buffer = g.add_remote_buffer(ir::DType::Float32, {5}, 1);
  try {
    g.add_remote_replica_sharded_variable("w", ir::DType::Float32, {5}, bytes_of(group_values(1, 5)), buffer, 0,
                                          std::nullopt, ir::RetrievalMode::OnePerGroup, 0);
    FAIL();
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::ShapeMismatch);
    EXPECT_THAT(e.what(), HasSubstr("holds float32[5] slots, the variable needs float32[3]"));
  }
  try {
    g.add_remote_variable("v", ir::DType::Float32, {5}, bytes_of(group_values(1, 5)), buffer, 1, std::nullopt,
                          ir::RetrievalMode::OnePerGroup);
    FAIL();
  } catch (const ir::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("entry 1 is outside [0, 1)"));
  }
}

}  // namespace
}  // namespace plexus::replication
