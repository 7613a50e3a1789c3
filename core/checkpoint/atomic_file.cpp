#include "core/checkpoint/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/ir/error.h"

namespace plexus::checkpoint {

namespace {

[[noreturn]] void io_error(const std::string& what, const std::string& file, int err) {
  ir::fail(ir::ErrorCode::Io, "checkpoint '" + file + "': cannot " + what + " (" + std::strerror(err) + ")");
}

std::string directory_of(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

// "<target>.tmp-<pid>-<n>" files whose process is gone. Best effort: errors are ignored.
void remove_stale_temporaries(const std::string& path) {
  const std::string prefix = std::filesystem::path(path).filename().string() + ".tmp-";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(directory_of(path), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) std::filesystem::remove(entry.path(), ec);
  }
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  static std::atomic<uint64_t> counter{0};
  temp_ = path_ + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) io_error("create the temporary file '" + temp_ + "'", path_, errno);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
}

void AtomicFile::write_at(uint64_t offset, const void* data, size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::pwrite(fd_, p, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) io_error("write '" + temp_ + "'", path_, errno);
    p += n;
    offset += static_cast<uint64_t>(n);
    bytes -= static_cast<size_t>(n);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) io_error("fsync '" + temp_ + "'", path_, errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) io_error("close '" + temp_ + "'", path_, errno);
  if (::rename(temp_.c_str(), path_.c_str()) != 0) io_error("rename '" + temp_ + "' over it", path_, errno);
  committed_ = true;
  const std::string dir = directory_of(path_);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) io_error("open its directory '" + dir + "' to fsync it", path_, errno);
  const int rc = ::fsync(dfd);
  const int err = errno;
  ::close(dfd);
  if (rc != 0) io_error("fsync its directory '" + dir + "'", path_, err);
  remove_stale_temporaries(path_);
}

}  // namespace plexus::checkpoint
