// libFuzzer target: the input is a checkpoint file. It is written to a temporary file of
// this process, opened with checkpoint::CheckpointReader and every tensor is read; the
// reader may refuse it only with ir::Error. Anything else escaping (libFuzzer reports an
// uncaught exception as a crash), a crash, a sanitizer report or a file descriptor left
// open (checked after every input) is a bug.
//
// The header checksum covers the header and the manifest, so almost every mutation of the
// manifest would stop at the checksum. Each input is therefore tried twice: as it is, and
// with the checksum at bytes [40, 44) recomputed over bytes [0, 40) and the manifest (as
// far as the input holds it), which lets the manifest parser and the frame checks see
// the mutated manifests.
#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/checkpoint/checkpoint_file.h"
#include "core/ir/error.h"
#include "fuzz_temp_file.h"

namespace {

void open_and_read(const std::string& path) {
  try {
    const plexus::checkpoint::CheckpointReader reader(path);
    for (const plexus::checkpoint::TensorEntry& entry : reader.manifest().tensors) {
      try {
        const std::vector<std::byte> bytes = reader.read(entry);
        if (bytes.size() != entry.bytes()) {
          std::fprintf(stderr, "reader_fuzzer: read() gave %zu bytes, not entry.bytes()\n", bytes.size());
          std::abort();
        }
      } catch (const plexus::ir::Error&) {
        // Refused: the other tensors are still read.
      }
    }
  } catch (const plexus::ir::Error&) {
    // Refused when opened.
  }
}

uint64_t get_u64(const uint8_t* at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(at[i]) << (8 * i);
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static plexus::test::FuzzTempFile file("checkpoint-reader-fuzzer");
  open_and_read(file.hold(data, size));
  file.check_closed_by_reader();

  if (size < 64) return 0;
  const size_t manifest = static_cast<size_t>(std::min<uint64_t>(get_u64(data + 16), size - 64));
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, data, 40);
  crc = crc32(crc, data + 64, static_cast<uInt>(manifest));
  uint8_t fixed[4];
  for (int i = 0; i < 4; ++i) fixed[i] = static_cast<uint8_t>((crc >> (8 * i)) & 0xff);
  if (std::memcmp(fixed, data + 40, 4) == 0) return 0;  // already valid: tried above
  std::vector<uint8_t> patched(data, data + size);
  std::memcpy(patched.data() + 40, fixed, 4);
  open_and_read(file.hold(patched.data(), patched.size()));
  file.check_closed_by_reader();
  return 0;
}
