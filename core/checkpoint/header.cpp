#include "core/checkpoint/header.h"

#include <cstring>

#include "core/checkpoint/crc32.h"
#include "core/ir/error.h"

namespace plexus::checkpoint {

namespace {

constexpr size_t kChecked = 40;  ///< header bytes covered by the checksum

template <class T>
void put(std::byte* at, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) at[i] = static_cast<std::byte>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
}

template <class T>
T get(const std::byte* at) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(at[i]) << (8 * i);
  return static_cast<T>(v);
}

uint32_t checksum(const std::byte* header, std::string_view manifest) {
  const uint32_t crc = crc32_of({header, kChecked});
  return crc32_of(std::as_bytes(std::span<const char>(manifest.data(), manifest.size())), crc);
}

[[noreturn]] void bad(const std::string& what, const std::string& message) {
  ir::fail(ir::ErrorCode::BadFormat, what + ": " + message);
}

}  // namespace

std::array<std::byte, kHeaderBytes> encode_header(Header h, std::string_view manifest) {
  std::array<std::byte, kHeaderBytes> out{};
  std::memcpy(out.data(), kMagic.data(), kMagic.size());
  put<uint32_t>(out.data() + 8, h.version);
  put<uint32_t>(out.data() + 12, static_cast<uint32_t>(kHeaderBytes));
  put<uint64_t>(out.data() + 16, h.manifest_bytes);
  put<uint64_t>(out.data() + 24, h.data_begin);
  put<uint64_t>(out.data() + 32, h.file_size);
  put<uint32_t>(out.data() + 40, checksum(out.data(), manifest));
  return out;
}

Header decode_header(const std::byte* bytes, uint64_t actual_file_size, const std::string& what) {
  if (std::memcmp(bytes, kMagic.data(), kMagic.size()) != 0) bad(what, "not a Plexus checkpoint (wrong magic number)");
  Header h;
  h.version = get<uint32_t>(bytes + 8);
  if (h.version != kFormatVersion) {
    bad(what, "checkpoint format version " + std::to_string(h.version) + "; this build reads version " +
                  std::to_string(kFormatVersion));
  }
  if (get<uint32_t>(bytes + 12) != kHeaderBytes) bad(what, "header size " + std::to_string(get<uint32_t>(bytes + 12)) + ", expected 64");
  for (size_t i = 44; i < kHeaderBytes; ++i) {
    if (bytes[i] != std::byte{0}) bad(what, "reserved header bytes are not zero (header damaged)");
  }
  h.manifest_bytes = get<uint64_t>(bytes + 16);
  h.data_begin = get<uint64_t>(bytes + 24);
  h.file_size = get<uint64_t>(bytes + 32);
  h.crc32 = get<uint32_t>(bytes + 40);
  if (h.file_size != actual_file_size) {
    bad(what, "the header records " + std::to_string(h.file_size) + " bytes but the file has " +
                  std::to_string(actual_file_size) + (actual_file_size < h.file_size ? " (truncated)" : " (trailing bytes)"));
  }
  if (h.manifest_bytes > h.file_size || h.data_begin != kHeaderBytes + h.manifest_bytes || h.data_begin > h.file_size) {
    bad(what, "inconsistent header: manifest " + std::to_string(h.manifest_bytes) + " bytes, data at " +
                  std::to_string(h.data_begin) + ", file " + std::to_string(h.file_size) + " bytes");
  }
  return h;
}

void verify_header_crc(const std::byte* header, std::string_view manifest, const std::string& what) {
  if (checksum(header, manifest) != get<uint32_t>(header + 40)) {
    bad(what, "the header and manifest checksum does not match (the header or the manifest is damaged)");
  }
}

}  // namespace plexus::checkpoint
