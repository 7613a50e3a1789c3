// A device's memory: one zero-initialised, 64-byte-aligned block of the size the memory
// plan needs, with exact accounting of the bytes live in it.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

#include "core/memory/host_block.h"

namespace plexus::memory {

/// Owns the block. Accounting: the device thread (single writer) reports the live byte
/// count as it runs; any thread may read it. Not copyable.
class Arena {
 public:
  /// Allocates `bytes` (at least 1). Throws ir::Error(OutOfDeviceMemory) when the host
  /// cannot provide them (allocate_block).
  explicit Arena(size_t bytes);

  std::byte* data() const { return data_.get(); }
  size_t capacity() const { return capacity_; }

  /// Records the bytes live now and raises the peak; called from the device thread only.
  void set_live_bytes(size_t bytes) noexcept {
    live_.store(bytes, std::memory_order_relaxed);
    if (bytes > peak_.load(std::memory_order_relaxed)) peak_.store(bytes, std::memory_order_relaxed);
  }
  size_t live_bytes() const noexcept { return live_.load(std::memory_order_relaxed); }
  size_t peak_bytes() const noexcept { return peak_.load(std::memory_order_relaxed); }

 private:
  HostBlock data_;
  size_t capacity_;
  std::atomic<size_t> live_{0};
  std::atomic<size_t> peak_{0};
};

}  // namespace plexus::memory
