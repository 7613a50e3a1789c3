// One replica's remote buffers (docs/design.md, "Semantics"): host memory that belongs to
// the device side, `entries` slots per buffer, accounted apart from the device arena.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "core/ir/tensor.h"
#include "core/memory/host_block.h"

namespace plexus::memory {

/// Owns one zero-initialised, 64-byte-aligned block per buffer. Not copyable; the bytes are
/// read and written by the replica's device thread (remote_load / remote_store) and by the
/// host between runs.
class RemoteMemory {
 public:
  explicit RemoteMemory(const std::vector<ir::RemoteBuffer>& buffers);

  /// Start of slot `entry` of buffer `buffer` (unchecked: the IR checked both).
  std::byte* slot(size_t buffer, int64_t entry) const {
    return blocks_[buffer].get() + static_cast<size_t>(entry) * slot_bytes_[buffer];
  }
  /// Start of each buffer, indexed by buffer id.
  std::vector<std::byte*> bases() const;
  /// Bytes held by all buffers (exact, without alignment padding).
  size_t bytes() const { return bytes_; }

 private:
  std::vector<HostBlock> blocks_;
  std::vector<size_t> slot_bytes_;
  size_t bytes_ = 0;
};

}  // namespace plexus::memory
