#include "core/memory/host_block.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/ir/error.h"
#include "core/memory/memory_plan.h"

namespace plexus::memory {

namespace {

size_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return SIZE_MAX;
  return static_cast<size_t>(pages) * static_cast<size_t>(page);
}

[[noreturn]] void refuse(std::string_view what, const std::string& bytes, const std::string& why) {
  ir::fail(ir::ErrorCode::OutOfDeviceMemory, "cannot allocate " + std::string(what) + ": " + bytes + " bytes " + why);
}

}  // namespace

void HostBlockFree::operator()(std::byte* p) const noexcept { std::free(p); }

size_t aligned_stride(size_t item_bytes) {
  return item_bytes > SIZE_MAX - kAlignment ? SIZE_MAX : align_up(item_bytes);
}

HostBlock allocate_block(size_t count, size_t item_bytes, std::string_view what) {
  size_t bytes = 0;
  if (__builtin_mul_overflow(count, item_bytes, &bytes) || bytes > SIZE_MAX - kAlignment) {
    refuse(what, std::to_string(count) + " x " + std::to_string(item_bytes), "overflow a 64-bit size");
  }
  const size_t size = align_up(std::max<size_t>(bytes, 1));
  const size_t physical = physical_memory_bytes();
  if (size > physical) {
    refuse(what, std::to_string(size), "exceed this machine's physical memory (" + std::to_string(physical) + " bytes)");
  }
  auto* p = static_cast<std::byte*>(std::aligned_alloc(kAlignment, size));
  if (p == nullptr) refuse(what, std::to_string(size), "were refused by the host allocator");
  std::memset(p, 0, size);
  return HostBlock(p);
}

}  // namespace plexus::memory
