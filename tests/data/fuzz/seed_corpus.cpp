// Writes the IDX reader fuzzer's seed corpus into the directory given as the only argument:
// a valid IDX file of each element type (uint8, int32, float32) and rank 1..3, raw
// (<type>-rank<r>.idx) and gzipped (<type>-rank<r>.idx.gz), each read back with read_idx.
// Usage: idx_seed_corpus <corpus directory>   (see this folder's CMakeLists.txt)
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/data/idx_reader.h"
#include "core/ir/error.h"

namespace {

using Bytes = std::vector<unsigned char>;

struct ElementType {
  const char* name;
  unsigned char code;  // the IDX element-type byte
  size_t size;
};

constexpr ElementType kTypes[] = {{"uint8", 0x08, 1}, {"int32", 0x0C, 4}, {"float32", 0x0D, 4}};

void append_be32(Bytes& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<unsigned char>(v >> shift));
}

// An IDX file of `type` with dims 2, 3, 4 up to `rank`; the elements count up from 1
// (float32: 0.5 steps), so byte-swapping mistakes would show.
Bytes idx_file(const ElementType& type, unsigned rank) {
  Bytes out = {0, 0, type.code, static_cast<unsigned char>(rank)};
  uint32_t count = 1;
  for (unsigned i = 0; i < rank; ++i) {
    append_be32(out, i + 2);
    count *= i + 2;
  }
  for (uint32_t i = 0; i < count; ++i) {
    if (type.size == 1) {
      out.push_back(static_cast<unsigned char>(i + 1));
    } else if (type.code == 0x0D) {
      const float v = 0.5f * static_cast<float>(i + 1);
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      append_be32(out, bits);
    } else {
      append_be32(out, i + 1);
    }
  }
  return out;
}

bool write_raw(const std::string& path, const Bytes& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return f.good();
}

bool write_gzip(const std::string& path, const Bytes& bytes) {
  gzFile f = gzopen(path.c_str(), "wb9");
  if (f == nullptr) return false;
  const bool written = gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size());
  return gzclose(f) == Z_OK && written;
}

// Writes one seed and reads it back; false (with a message) when either fails.
bool seed(const std::string& path, const Bytes& bytes, bool gzipped) {
  if (!(gzipped ? write_gzip(path, bytes) : write_raw(path, bytes))) {
    std::fprintf(stderr, "idx_seed_corpus: cannot write %s\n", path.c_str());
    return false;
  }
  try {
    (void)plexus::data::read_idx(path);
  } catch (const plexus::ir::Error& e) {
    std::fprintf(stderr, "idx_seed_corpus: %s\n", e.what());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus directory>\n", argv[0]);
    return 2;
  }
  for (const ElementType& type : kTypes) {
    for (unsigned rank = 1; rank <= 3; ++rank) {
      const std::string base = std::string(argv[1]) + "/" + type.name + "-rank" + std::to_string(rank) + ".idx";
      const Bytes bytes = idx_file(type, rank);
      if (!seed(base, bytes, false) || !seed(base + ".gz", bytes, true)) return 1;
    }
  }
  return 0;
}
