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
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/checkpoint/checkpoint_file.h"
#include "core/ir/error.h"

namespace {

// How many descriptors of this process are open on `path` (a canonical path).
int descriptors_on(const std::string& path) {
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

// The temporary file of this process, removed at exit (libFuzzer's -jobs and -fork run
// several processes, each with its own): in $TMPDIR, else in /dev/shm (memory: rewriting a
// file on disk thousands of times a second waits behind other processes' fsyncs), else /tmp.
class TempFile {
 public:
  TempFile() {
    const char* tmpdir = std::getenv("TMPDIR");
    const std::string dir = tmpdir && *tmpdir                       ? tmpdir
                            : ::access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm"
                                                                    : "/tmp";
    path_ = dir + "/plexus-reader-fuzzer-XXXXXX";
    fd_ = ::mkstemp(path_.data());
    if (fd_ < 0) fail("mkstemp");
    char canonical[PATH_MAX];
    if (::realpath(path_.c_str(), canonical) == nullptr) fail("realpath");
    path_ = canonical;
  }
  ~TempFile() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  // Replaces the file's contents with `bytes`.
  const std::string& hold(const uint8_t* bytes, size_t size) {
    if (::ftruncate(fd_, 0) != 0) fail("ftruncate");
    for (size_t done = 0; done < size;) {
      const ssize_t n = ::pwrite(fd_, bytes + done, size - done, static_cast<off_t>(done));
      if (n <= 0) fail("pwrite");
      done += static_cast<size_t>(n);
    }
    return path_;
  }

  // Aborts unless the file is open only here: the reader must close it, also when it
  // refuses the file. (Counting this process's descriptors would not do: the sanitizers'
  // symbolizer keeps pipes open once started.)
  void check_closed_by_reader() const {
    if (descriptors_on(path_) != 1) {
      std::fprintf(stderr, "reader_fuzzer: the reader left a file descriptor open on the checkpoint\n");
      std::abort();
    }
  }

 private:
  [[noreturn]] static void fail(const char* what) {
    std::fprintf(stderr, "reader_fuzzer: ");
    std::perror(what);
    std::abort();
  }
  std::string path_;
  int fd_ = -1;
};

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
  static TempFile file;
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
