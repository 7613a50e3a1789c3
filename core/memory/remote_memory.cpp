#include "core/memory/remote_memory.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/ir/error.h"
#include "core/memory/memory_plan.h"

namespace plexus::memory {

void RemoteMemory::Free::operator()(std::byte* p) const noexcept { std::free(p); }

RemoteMemory::RemoteMemory(const std::vector<ir::RemoteBuffer>& buffers) {
  for (size_t b = 0; b < buffers.size(); ++b) {
    const size_t bytes = buffers[b].slot_bytes() * static_cast<size_t>(buffers[b].entries);
    const size_t size = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
    auto* p = static_cast<std::byte*>(std::aligned_alloc(kAlignment, size));
    if (p == nullptr) {
      ir::fail(ir::ErrorCode::OutOfDeviceMemory, "cannot allocate " + std::to_string(size) + " bytes for remote buffer " +
                                                     std::to_string(b));
    }
    std::memset(p, 0, size);
    blocks_.emplace_back(p);
    slot_bytes_.push_back(buffers[b].slot_bytes());
    bytes_ += bytes;
  }
}

std::vector<std::byte*> RemoteMemory::bases() const {
  std::vector<std::byte*> out;
  for (const auto& block : blocks_) out.push_back(block.get());
  return out;
}

}  // namespace plexus::memory
