// The RTS shard layout: flatten, pad at the end to a multiple of shard_over, split
// contiguously (docs/design.md, "Semantics"), on the sizes the issue names.
#include "core/replication/shard_layout.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

namespace plexus::replication {
namespace {

TEST(ShardLayout, PaddingAndRoundTripsForManySizes) {
  for (int64_t numel : {1, 7, 320, 25088}) {
    for (int64_t shards : {2, 3, 4}) {
      const int64_t chunk = shard_chunk(numel, shards);
      EXPECT_EQ(chunk, (numel + shards - 1) / shards);
      EXPECT_GE(chunk * shards, numel);
      EXPECT_LT(chunk * shards - numel, shards);  // padding is less than one element per shard
      std::vector<float> full(static_cast<size_t>(numel));
      std::iota(full.begin(), full.end(), 1.0f);
      std::vector<float> rebuilt(full.size(), -1.0f);
      for (int64_t m = 0; m < shards; ++m) {
        std::vector<float> shard(static_cast<size_t>(chunk), -7.0f);
        extract_shard(reinterpret_cast<const std::byte*>(full.data()), reinterpret_cast<std::byte*>(shard.data()),
                      numel, shards, m, sizeof(float));
        for (int64_t i = 0; i < chunk; ++i) {
          const int64_t global = m * chunk + i;
          // data where the tensor has it, zeros in the padding
          EXPECT_EQ(shard[static_cast<size_t>(i)], global < numel ? static_cast<float>(global + 1) : 0.0f)
              << "numel " << numel << " shards " << shards << " shard " << m << " element " << i;
        }
        insert_shard(reinterpret_cast<const std::byte*>(shard.data()), reinterpret_cast<std::byte*>(rebuilt.data()),
                     numel, shards, m, sizeof(float));
      }
      EXPECT_EQ(rebuilt, full) << "numel " << numel << " shards " << shards;
    }
  }
}

TEST(ShardLayout, MoreShardsThanElementsLeavesWholeShardsOfPadding) {
  const float one = 5.0f;
  float shard = -1.0f, back = 0.0f;
  for (int64_t m = 1; m < 4; ++m) {
    extract_shard(reinterpret_cast<const std::byte*>(&one), reinterpret_cast<std::byte*>(&shard), 1, 4, m, sizeof(float));
    EXPECT_EQ(shard, 0.0f);
    insert_shard(reinterpret_cast<const std::byte*>(&shard), reinterpret_cast<std::byte*>(&back), 1, 4, m, sizeof(float));
    EXPECT_EQ(back, 0.0f);  // padding never lands in the tensor
  }
}

}  // namespace
}  // namespace plexus::replication
