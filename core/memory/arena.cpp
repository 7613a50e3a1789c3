#include "core/memory/arena.h"

namespace plexus::memory {

Arena::Arena(size_t bytes) : data_(allocate_block(1, bytes, "a device arena")), capacity_(bytes) {}

}  // namespace plexus::memory
