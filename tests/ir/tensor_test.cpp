// Tensors of an IR (core/ir/tensor.cpp): bytes, the type string of messages, shard sizes
// and domains (seed 000's replicated tensor sharding), remote buffer slots.
#include "core/ir/tensor.h"

#include <gtest/gtest.h>

namespace plexus::ir {
namespace {

TEST(TensorInfo, BytesAreElementsTimesTheDtypeSize) {
  TensorInfo t;
  t.dtype = DType::Float32;
  t.shape = {8, 784};
  EXPECT_EQ(t.bytes(), 8u * 784u * 4u);
  t.dtype = DType::UInt8;
  EXPECT_EQ(t.bytes(), 8u * 784u);
  t.shape = {};  // a scalar
  EXPECT_EQ(t.bytes(), 1u);
  t.shape = {3, 0};
  EXPECT_EQ(t.bytes(), 0u);
}

TEST(TensorInfo, TypeStringIsDtypeThenShape) {
  TensorInfo t;
  t.dtype = DType::Float32;
  t.shape = {8, 784};
  EXPECT_EQ(t.type_string(), "float32[8,784]");
  t.dtype = DType::Int32;
  t.shape = {};
  EXPECT_EQ(t.type_string(), "int32[]");
}

TEST(Sharding, ShardsAreTheCeilingOfElementsOverShards) {
  // seed 000: W0 [784, 32] over 2 replicas: 12544 each; [5] over 2: 3 each (one padding).
  EXPECT_EQ((Sharding{{784, 32}, 2, 1}.shard_elements()), 12544);
  EXPECT_EQ((Sharding{{5}, 2, 1}.shard_elements()), 3);
  EXPECT_EQ((Sharding{{5}, 8, 1}.shard_elements()), 1);
  EXPECT_EQ((Sharding{{7, 3}, 1, 1}.shard_elements()), 21);
}

TEST(Sharding, DomainIsTheGroupingOfTheShardOwners) {
  const Sharding s{{16}, 2, 4};
  const ReplicaGrouping domain = s.domain(8);
  EXPECT_EQ(domain, (ReplicaGrouping{8, 2, 4}));
  EXPECT_EQ(s, (Sharding{{16}, 2, 4}));
  EXPECT_NE(s, (Sharding{{16}, 2, 1}));
}

TEST(RemoteBuffer, SlotBytesAreOneEntrysBytes) {
  const RemoteBuffer b{{4, 8}, DType::Float32, 3, std::nullopt};
  EXPECT_EQ(b.slot_bytes(), 4u * 8u * 4u);
  const RemoteBuffer labels{{64}, DType::Int32, 10, std::nullopt};
  EXPECT_EQ(labels.slot_bytes(), 256u);
}

}  // namespace
}  // namespace plexus::ir
