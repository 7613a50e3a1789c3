// The file a libFuzzer target over a file reader writes each input to (tests/*/fuzz): one
// per process, removed at exit, with a check that the reader closed every descriptor it
// opened on it. Header only: each fuzzer is its own small CMake project.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

namespace plexus::test {

/// A temporary file of this process (libFuzzer's -jobs and -fork run several processes,
/// each with its own): in $TMPDIR, else in /dev/shm (memory: rewriting a file on disk
/// thousands of times a second waits behind other processes' fsyncs), else /tmp.
class FuzzTempFile {
 public:
  /// `fuzzer` names the fuzzer in the file's name and in messages.
  explicit FuzzTempFile(std::string fuzzer) : fuzzer_(std::move(fuzzer)) {
    const char* tmpdir = std::getenv("TMPDIR");
    const std::string dir = tmpdir && *tmpdir                       ? tmpdir
                            : ::access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm"
                                                                    : "/tmp";
    path_ = dir + "/plexus-" + fuzzer_ + "-XXXXXX";
    fd_ = ::mkstemp(path_.data());
    if (fd_ < 0) fail("mkstemp");
    char canonical[PATH_MAX];
    if (::realpath(path_.c_str(), canonical) == nullptr) fail("realpath");
    path_ = canonical;
  }
  ~FuzzTempFile() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  FuzzTempFile(const FuzzTempFile&) = delete;
  FuzzTempFile& operator=(const FuzzTempFile&) = delete;

  /// Replaces the file's contents with `bytes`; returns its (canonical) path.
  const std::string& hold(const uint8_t* bytes, size_t size) {
    if (::ftruncate(fd_, 0) != 0) fail("ftruncate");
    for (size_t done = 0; done < size;) {
      const ssize_t n = ::pwrite(fd_, bytes + done, size - done, static_cast<off_t>(done));
      if (n <= 0) fail("pwrite");
      done += static_cast<size_t>(n);
    }
    return path_;
  }

  /// Aborts unless the file is open only here: the reader must close it, also when it
  /// refuses the file. (Counting this process's descriptors would not do: the sanitizers'
  /// symbolizer keeps pipes open once started.)
  void check_closed_by_reader() const {
    if (descriptors_on(path_) != 1) {
      std::fprintf(stderr, "%s: the reader left a file descriptor open on its input\n", fuzzer_.c_str());
      std::abort();
    }
  }

 private:
  // How many descriptors of this process are open on `path` (a canonical path).
  static int descriptors_on(const std::string& path) {
    int n = 0;
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) return -1;
    while (const dirent* e = ::readdir(dir)) {
      char target[PATH_MAX];
      const std::string link = std::string("/proc/self/fd/") + e->d_name;
      const ssize_t len = ::readlink(link.c_str(), target, sizeof target);
      if (len > 0 && std::string_view(target, static_cast<size_t>(len)) == path) ++n;
    }
    ::closedir(dir);
    return n;
  }

  [[noreturn]] void fail(const char* what) const {
    std::fprintf(stderr, "%s: ", fuzzer_.c_str());
    std::perror(what);
    std::abort();
  }

  std::string fuzzer_;
  std::string path_;
  int fd_ = -1;
};

}  // namespace plexus::test
