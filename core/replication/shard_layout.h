// The RTS shard layout (docs/design.md, "Semantics"): a tensor of numel elements is flattened,
// zero-padded at the end to shard_over * chunk elements, chunk = ceil(numel / shard_over),
// and split contiguously; shard m is elements [m * chunk, (m + 1) * chunk).
#pragma once

#include <cstddef>
#include <cstdint>

namespace plexus::replication {

/// Elements per shard.
constexpr int64_t shard_chunk(int64_t numel, int64_t shard_over) { return (numel + shard_over - 1) / shard_over; }

/// Copies shard `index` of `full` (numel elements of `element_bytes` each) to `shard`
/// (chunk elements), zero-filling the padding.
void extract_shard(const std::byte* full, std::byte* shard, int64_t numel, int64_t shard_over, int64_t index,
                   size_t element_bytes);

/// Copies `shard` into its place in `full`, dropping the padding; other elements of `full`
/// are left as they are.
void insert_shard(const std::byte* shard, std::byte* full, int64_t numel, int64_t shard_over, int64_t index,
                  size_t element_bytes);

}  // namespace plexus::replication
