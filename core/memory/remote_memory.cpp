#include "core/memory/remote_memory.h"

#include <string>

namespace plexus::memory {

RemoteMemory::RemoteMemory(const std::vector<ir::RemoteBuffer>& buffers) {
  for (size_t b = 0; b < buffers.size(); ++b) {
    const size_t slot_bytes = buffers[b].slot_bytes();
    const auto entries = static_cast<size_t>(buffers[b].entries);
    blocks_.push_back(allocate_block(entries, slot_bytes, "remote buffer " + std::to_string(b)));
    slot_bytes_.push_back(slot_bytes);
    bytes_ += entries * slot_bytes;
  }
}

std::vector<std::byte*> RemoteMemory::bases() const {
  std::vector<std::byte*> out;
  for (const auto& block : blocks_) out.push_back(block.get());
  return out;
}

}  // namespace plexus::memory
