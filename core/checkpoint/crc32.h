// The CRC-32 of a checkpoint's header + manifest and of every tensor's plain bytes
// (docs/checkpoint-format.md): zlib's polynomial (IEEE 802.3, check value 0xcbf43926),
// computed with libdeflate, which uses carry-less multiplication (PCLMUL) where the CPU has
// it. zlib's own crc32 ran at 2.25 GB/s here, 12 % of a level-1 encode and ~20 % of a decode
// (bench/README.md, checkpoint_bench).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace plexus::checkpoint {

/// CRC-32 of `data`, continuing from `crc` (the CRC of the bytes before it; 0 to start), so
/// crc32_of(b, crc32_of(a)) is the CRC of a followed by b. Any length. Thread-safe.
uint32_t crc32_of(std::span<const std::byte> data, uint32_t crc = 0);

}  // namespace plexus::checkpoint
