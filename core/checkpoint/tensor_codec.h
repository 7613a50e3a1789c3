// One tensor <-> one zstd frame of a checkpoint (docs/checkpoint-format.md): optionally
// byte-shuffled (byte_shuffle.h), compressed with the frame's content size and content
// checksum on; the CRC-32 of the plain bytes goes in the manifest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/checkpoint/manifest.h"

namespace plexus::checkpoint {

/// Compresses `data` (entry.bytes() bytes) at zstd `level` (1 .. 19), byte-shuffled first
/// when entry.shuffle, into `frame` (resized to the frame; its capacity is reused, so a
/// caller passes the same vector for tensor after tensor); sets entry.crc32 and entry.size.
/// Throws ir::Error(Internal) when zstd fails. Thread-safe: each thread has its own zstd
/// context and shuffle buffer.
void encode_tensor(TensorEntry& entry, std::span<const std::byte> data, int level, std::vector<std::byte>& frame);

/// Checks that `frame` is one complete zstd frame whose content size is entry.bytes();
/// throws ir::Error(BadFormat) naming the tensor, prefixed with `what`.
void check_frame(const TensorEntry& entry, std::span<const std::byte> frame, const std::string& what);

/// Decompresses `frame` into `out` (entry.bytes() bytes) and checks it: one zstd frame
/// whose content size is entry.bytes() and whose content checksum holds, then the crc32.
/// Throws ir::Error(BadFormat) naming the tensor, prefixed with `what` (the file).
/// Thread-safe, as encode_tensor.
void decode_tensor(const TensorEntry& entry, std::span<const std::byte> frame, std::span<std::byte> out,
                   const std::string& what);

}  // namespace plexus::checkpoint
