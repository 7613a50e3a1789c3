// Writing and reading checkpoint files (docs/checkpoint-format.md; docs/design.md
// "Checkpoints"): a 64-byte header, the JSON manifest, then one zstd frame per tensor.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/checkpoint/manifest.h"

namespace plexus::checkpoint {

struct WriteOptions {
  int level = 3;    ///< zstd level, 1 .. 19
  int threads = 1;  ///< tensors compressed at once, >= 1
};

struct WriteStats {
  uint64_t uncompressed_bytes = 0;  ///< tensor bytes
  uint64_t file_bytes = 0;          ///< the whole file
};

/// Writes `manifest` and `data` (data[i]: manifest.tensors[i].bytes() bytes, rows
/// row-major) to `path`, crash-safely (atomic_file.h). Fills in each entry's offset, size
/// and crc32. Throws ir::Error(InvalidArgument) for a bad level, thread count or data size,
/// ir::Error(Io) when the file cannot be written; the previous file at `path` then stays.
WriteStats write_checkpoint(const std::string& path, Manifest manifest, const std::vector<std::span<const std::byte>>& data,
                            const WriteOptions& options);

/// An open checkpoint: header and manifest checked on opening, each tensor when read.
/// Thread-safety: read() may be called from several threads at once.
class CheckpointReader {
 public:
  /// Throws ir::Error(Io) when the file cannot be opened or read, ir::Error(BadFormat)
  /// saying what is wrong (magic, version, sizes, checksum, manifest) otherwise.
  explicit CheckpointReader(std::string path);
  ~CheckpointReader();
  CheckpointReader(const CheckpointReader&) = delete;
  CheckpointReader& operator=(const CheckpointReader&) = delete;

  const Manifest& manifest() const { return manifest_; }
  const std::string& path() const { return path_; }
  uint64_t file_size() const { return file_size_; }
  /// The entry named `name`, or null.
  const TensorEntry* find(const std::string& name) const;
  /// The tensor's bytes (entry.bytes()), checked: throws ir::Error(BadFormat) naming it.
  std::vector<std::byte> read(const TensorEntry& entry) const;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t file_size_ = 0;
  Manifest manifest_;
  void open_checked();
  void read_at(uint64_t offset, std::byte* out, uint64_t bytes) const;
};

}  // namespace plexus::checkpoint
