// The one way Plexus takes a large block of host memory for device-side state (arenas,
// remote buffers, stream queues): 64-byte aligned, zero-filled, refused with a clear error
// when the size overflows or exceeds the machine's physical memory.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

namespace plexus::memory {

/// Frees a HostBlock's bytes (std::free).
struct HostBlockFree {
  void operator()(std::byte* p) const noexcept;
};

/// Owner of one block from allocate_block. Move-only; the bytes carry no thread affinity.
using HostBlock = std::unique_ptr<std::byte, HostBlockFree>;

/// Allocates `count` items of `item_bytes` bytes each (at least one byte in all), rounded
/// up to 64 bytes, 64-byte aligned and zero-filled. Throws ir::Error(OutOfDeviceMemory)
/// naming `what` and the bytes when count * item_bytes overflows size_t, exceeds the
/// machine's physical memory (a block that large could only end in the OOM killer, or, under
/// a sanitizer, an abort), or the allocation fails. Thread-safe.
HostBlock allocate_block(size_t count, size_t item_bytes, std::string_view what);

/// `item_bytes` rounded up to the 64-byte alignment (memory_plan.h kAlignment): the stride
/// of items that must each start aligned in one allocate_block. SIZE_MAX when the rounding
/// would overflow, which allocate_block then refuses with its error. Pure.
size_t aligned_stride(size_t item_bytes);

}  // namespace plexus::memory
