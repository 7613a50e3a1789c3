#include "core/memory/arena.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/ir/error.h"
#include "core/memory/memory_plan.h"

namespace plexus::memory {

void Arena::Free::operator()(std::byte* p) const noexcept { std::free(p); }

Arena::Arena(size_t bytes) : capacity_(bytes) {
  const size_t size = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  auto* p = static_cast<std::byte*>(std::aligned_alloc(kAlignment, size));
  if (p == nullptr) {
    ir::fail(ir::ErrorCode::OutOfDeviceMemory, "cannot allocate a device arena of " + std::to_string(size) + " bytes");
  }
  std::memset(p, 0, size);
  data_.reset(p);
}

}  // namespace plexus::memory
