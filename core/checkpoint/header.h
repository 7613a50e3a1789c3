// The fixed 64-byte header that starts a checkpoint file (docs/checkpoint-format.md),
// little-endian:
//   [0, 8)   magic "PLEXUSCK"
//   [8, 12)  format version (kFormatVersion)
//   [12, 16) header size (64)
//   [16, 24) manifest size in bytes; the manifest follows the header
//   [24, 32) data begin: 64 + manifest size, where the zstd frames start
//   [32, 40) file size: the whole file, so a truncated file is caught before anything else
//   [40, 44) zlib crc32 of bytes [0, 40) followed by the manifest
//   [44, 64) zero
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace plexus::checkpoint {

inline constexpr std::string_view kMagic = "PLEXUSCK";
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr size_t kHeaderBytes = 64;

struct Header {
  uint32_t version = kFormatVersion;
  uint64_t manifest_bytes = 0;
  uint64_t data_begin = 0;
  uint64_t file_size = 0;
  uint32_t crc32 = 0;
};

/// The header bytes for `h` with its checksum computed over them and `manifest`.
std::array<std::byte, kHeaderBytes> encode_header(Header h, std::string_view manifest);

/// Reads the fields of a header (magic, version, sizes), checking the magic, the version,
/// the header size, the reserved bytes and that the sizes agree with each other and with
/// `actual_file_size`. Throws ir::Error(BadFormat) saying what is wrong, prefixed with
/// `what` (the file). The checksum is checked by verify_header_crc once the manifest is read.
Header decode_header(const std::byte* bytes, uint64_t actual_file_size, const std::string& what);

/// Throws ir::Error(BadFormat) when the checksum of `header` does not match it and `manifest`.
void verify_header_crc(const std::byte* header, std::string_view manifest, const std::string& what);

}  // namespace plexus::checkpoint
