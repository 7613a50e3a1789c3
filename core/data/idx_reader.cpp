#include "core/data/idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/ir/error.h"

namespace plexus::data {

namespace {

using ir::ErrorCode;

constexpr uint64_t kMaxBytes = uint64_t{1} << 32;

struct GzClose {
  void operator()(gzFile f) const noexcept { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzClose>;

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  ir::fail(ErrorCode::BadFormat, "IDX file '" + path + "': " + what);
}

// Reads up to `n` bytes; returns how many were read. Throws Io on a read error.
size_t read_some(gzFile f, const std::string& path, void* out, size_t n) {
  size_t total = 0;
  while (total < n) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - total, 1u << 30));
    const int got = gzread(f, static_cast<char*>(out) + total, chunk);
    if (got < 0) {
      int code = 0;
      const char* msg = gzerror(f, &code);
      // A damaged gzip stream is a format problem, an OS error an I/O one.
      ir::fail(code == Z_ERRNO ? ErrorCode::Io : ErrorCode::BadFormat,
               "IDX file '" + path + "': read failed: " + (code == Z_ERRNO ? std::strerror(errno) : msg));
    }
    if (got == 0) break;
    total += static_cast<size_t>(got);
  }
  return total;
}

ir::DType element_type(const std::string& path, uint8_t code) {
  switch (code) {
    case 0x08:
      return ir::DType::UInt8;
    case 0x0C:
      return ir::DType::Int32;
    case 0x0D:
      return ir::DType::Float32;
    default:
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", code);
      bad(path, std::string("element type ") + hex + " is not supported (0x08 ubyte, 0x0C int, 0x0D float)");
  }
}

uint32_t big_endian_u32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// Reads the `bytes` of data the header declares. The buffer grows (doubling from 1 MiB)
// only as data arrives, so a short file that declares gigabytes costs what it holds, not
// what it declares.
std::vector<std::byte> read_data(gzFile f, const std::string& path, const ir::Shape& shape, size_t bytes) {
  constexpr size_t kFirstChunk = size_t{1} << 20;
  std::vector<std::byte> data;
  while (data.size() < bytes) {
    const size_t have = data.size();
    data.resize(std::min(bytes, std::max(2 * have, kFirstChunk)));
    const size_t got = have + read_some(f, path, data.data() + have, data.size() - have);
    if (got != data.size()) {
      bad(path, "truncated: header " + ir::shape_string(shape) + " declares " + std::to_string(bytes) +
                    " bytes of data but only " + std::to_string(got) + " follow");
    }
  }
  return data;
}

}  // namespace

IdxArray read_idx(const std::string& path) {
  GzFile file(gzopen(path.c_str(), "rb"));
  if (!file) ir::fail(ErrorCode::Io, "IDX file '" + path + "': cannot open: " + std::strerror(errno));
  IdxArray out;
  out.path = path;

  unsigned char magic[4];
  if (read_some(file.get(), path, magic, 4) != 4) bad(path, "file is shorter than the 4-byte magic number");
  if (magic[0] != 0 || magic[1] != 0) {
    bad(path, "wrong magic number (first two bytes must be 0; is this an IDX file?)");
  }
  out.dtype = element_type(path, magic[2]);
  const unsigned rank = magic[3];
  if (rank < 1 || rank > ir::kMaxRank) bad(path, "rank " + std::to_string(rank) + " is outside 1.." + std::to_string(ir::kMaxRank));

  std::vector<unsigned char> dims(4 * rank);
  if (read_some(file.get(), path, dims.data(), dims.size()) != dims.size()) bad(path, "header is truncated");
  uint64_t count = 1;
  for (unsigned i = 0; i < rank; ++i) {
    const uint32_t d = big_endian_u32(&dims[4 * i]);
    if (d == 0) bad(path, "dim " + std::to_string(i) + " is 0");
    out.shape.push_back(d);
    count *= d;
    if (count * ir::dtype_size(out.dtype) > kMaxBytes) bad(path, "declares more than 4 GiB of data");
  }
  const size_t bytes = static_cast<size_t>(count) * ir::dtype_size(out.dtype);
  out.data = read_data(file.get(), path, out.shape, bytes);
  unsigned char extra[256];
  const size_t trailing = read_some(file.get(), path, extra, sizeof extra);
  if (trailing != 0) bad(path, "unexpected bytes after the " + std::to_string(bytes) + " bytes of data");

  if (ir::dtype_size(out.dtype) == 4) {  // big-endian on disk
    for (size_t i = 0; i < bytes; i += 4) {
      std::swap(out.data[i], out.data[i + 3]);
      std::swap(out.data[i + 1], out.data[i + 2]);
    }
  }
  return out;
}

IdxDataset read_idx_dataset(const std::string& images_path, const std::string& labels_path) {
  IdxDataset ds{read_idx(images_path), read_idx(labels_path)};
  if (ds.labels.shape.size() != 1) {
    ir::fail(ErrorCode::BadFormat, "IDX labels file '" + labels_path + "' has shape " +
                                       ir::shape_string(ds.labels.shape) + ", expected one dim");
  }
  if (ds.labels.shape[0] != ds.images.shape[0]) {
    ir::fail(ErrorCode::BadFormat, "IDX files disagree: '" + images_path + "' holds " +
                                       std::to_string(ds.images.shape[0]) + " samples but '" + labels_path +
                                       "' holds " + std::to_string(ds.labels.shape[0]) + " labels");
  }
  return ds;
}

}  // namespace plexus::data
