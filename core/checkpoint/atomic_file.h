// Writing a file so that a crash never leaves a broken one in its place (docs/design.md
// "Checkpoints"; issue 7): the bytes go to a temporary file in the target's directory,
// which is fsynced, renamed over the target, and the directory fsynced. Until commit()
// returns, the previous file at the path (if any) is intact; after it, the new one is
// durable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace plexus::checkpoint {

/// Not thread-safe. Errors are ir::Error(Io) naming the file and the system's reason.
class AtomicFile {
 public:
  /// Creates the temporary file "<path>.tmp-<pid>-<n>" (exclusively) next to `path`.
  explicit AtomicFile(std::string path);
  /// Removes the temporary file unless commit() succeeded.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  /// Writes `bytes` bytes at byte `offset` of the temporary file (pwrite; any order).
  void write_at(uint64_t offset, const void* data, size_t bytes);
  /// fsync, close, rename over the target, fsync the directory; then removes temporary
  /// files of this target left by processes that no longer exist (killed mid-save).
  void commit();
  const std::string& temp_path() const { return temp_; }

 private:
  std::string path_, temp_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace plexus::checkpoint
