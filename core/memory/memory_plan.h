// Static memory plan of one device: every buffer gets a fixed offset in the device arena,
// buffers whose lifetimes do not overlap share bytes (greedy by size, best fit, as in
// TensorFlow Lite's arena planner). Persistent buffers (variables, constants) come first
// and are never shared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace plexus::memory {

/// Offsets are aligned to this many bytes (a cache line; enough for any SIMD load).
inline constexpr size_t kAlignment = 64;

/// n rounded up to a multiple of kAlignment: the bytes a buffer of n bytes takes in an
/// arena or a plan. n <= SIZE_MAX - kAlignment + 1 (planned sizes are; host_block.h's
/// aligned_stride saturates instead). Pure.
constexpr size_t align_up(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

/// One buffer to place. `first` and `last` are positions in the schedule (inclusive)
/// where the buffer is written first and read last; ignored for persistent buffers.
struct BufferRequest {
  size_t bytes = 0;
  int64_t first = 0;
  int64_t last = 0;
  bool persistent = false;
};

struct MemoryPlan {
  std::vector<size_t> offsets;     ///< per request, in bytes from the arena start
  size_t arena_bytes = 0;          ///< arena size the plan needs (aligned, with any gaps)
  size_t persistent_bytes = 0;     ///< exact bytes of persistent buffers
  size_t peak_live_bytes = 0;      ///< max over positions of exact bytes live at once
  std::vector<size_t> live_bytes;  ///< exact bytes live at each position 0..num_positions-1
};

/// Plans `requests` over `num_positions` schedule positions. Deterministic.
/// Guarantees: buffers live at a common position never overlap; arena_bytes >= peak.
MemoryPlan plan_memory(const std::vector<BufferRequest>& requests, int64_t num_positions);

}  // namespace plexus::memory
