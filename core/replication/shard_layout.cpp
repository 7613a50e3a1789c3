#include "core/replication/shard_layout.h"

#include <algorithm>
#include <cstring>

namespace plexus::replication {

namespace {

// Elements of shard `index` that hold data rather than padding, and where they start.
struct Span {
  size_t first, valid, chunk;
};

Span shard_span(int64_t numel, int64_t shard_over, int64_t index) {
  const auto chunk = static_cast<size_t>(shard_chunk(numel, shard_over));
  const size_t first = std::min(static_cast<size_t>(numel), chunk * static_cast<size_t>(index));
  return {first, std::min(chunk, static_cast<size_t>(numel) - first), chunk};
}

}  // namespace

void extract_shard(const std::byte* full, std::byte* shard, int64_t numel, int64_t shard_over, int64_t index,
                   size_t element_bytes) {
  const Span s = shard_span(numel, shard_over, index);
  std::memcpy(shard, full + s.first * element_bytes, s.valid * element_bytes);
  std::memset(shard + s.valid * element_bytes, 0, (s.chunk - s.valid) * element_bytes);
}

void insert_shard(const std::byte* shard, std::byte* full, int64_t numel, int64_t shard_over, int64_t index,
                  size_t element_bytes) {
  const Span s = shard_span(numel, shard_over, index);
  std::memcpy(full + s.first * element_bytes, shard, s.valid * element_bytes);
}

}  // namespace plexus::replication
