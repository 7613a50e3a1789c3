#include "core/checkpoint/crc32.h"

#include <libdeflate.h>

namespace plexus::checkpoint {

uint32_t crc32_of(std::span<const std::byte> data, uint32_t crc) {
  return libdeflate_crc32(crc, data.data(), data.size());
}

}  // namespace plexus::checkpoint
