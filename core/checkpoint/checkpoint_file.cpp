#include "core/checkpoint/checkpoint_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

#include "core/checkpoint/atomic_file.h"
#include "core/checkpoint/header.h"
#include "core/checkpoint/tensor_codec.h"
#include "core/ir/error.h"

namespace plexus::checkpoint {

namespace {

size_t decimal_digits(uint64_t v) {
  size_t n = 1;
  for (; v >= 10; v /= 10) ++n;
  return n;
}

// The manifest's length once the frames are placed, at most. It is written after the
// frames, in a space reserved before them, and padded with spaces to this length. One
// serialisation with every offset and size at 2^64 - 1 (20 digits) and every crc32 at
// 2^32 - 1 (its widest) gives the length L0; each offset and size then gives back the
// digits its bound lacks: a frame is at most ZSTD_compressBound of its bytes, and the
// offsets follow from L0 >= the final length.
uint64_t manifest_bound(Manifest m) {
  constexpr uint64_t kWidest = std::numeric_limits<uint64_t>::max();
  for (TensorEntry& e : m.tensors) {
    e.offset = e.size = kWidest;
    e.crc32 = std::numeric_limits<uint32_t>::max();
  }
  const uint64_t widest = to_json(m).size();
  uint64_t length = widest, offset = kHeaderBytes + widest;
  for (const TensorEntry& e : m.tensors) {
    const uint64_t size = ZSTD_compressBound(e.bytes());
    length -= 2 * decimal_digits(kWidest) - decimal_digits(offset) - decimal_digits(size);
    offset += size;
  }
  return length;
}

// Compresses every tensor, `threads` at a time, and writes each frame as soon as the frames
// before it are written (only frames finished out of order wait in memory), from
// `data_begin` on; sets each entry's offset, size and crc32. Returns the end of the last
// frame.
uint64_t write_frames(Manifest& m, const std::vector<std::span<const std::byte>>& data, const WriteOptions& o,
                      AtomicFile& file, uint64_t data_begin) {
  std::vector<std::vector<std::byte>> waiting(m.tensors.size());
  std::vector<bool> done(waiting.size(), false);
  std::mutex mutex;
  size_t written = 0;  // frames [0, written) are in the file
  uint64_t end = data_begin;
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  auto write = [&](std::vector<std::byte>& frame) {
    m.tensors[written++].offset = end;
    file.write_at(end, frame.data(), frame.size());
    end += frame.size();
  };
  // Frame i is done: written now when it is next (the caller keeps its buffer), else left
  // waiting; then the waiting frames that are next.
  auto flush = [&](size_t i, std::vector<std::byte>& frame) {
    std::lock_guard lock(mutex);
    done[i] = true;
    if (i == written) {
      write(frame);
    } else {
      waiting[i] = std::move(frame);
    }
    while (written < waiting.size() && done[written]) {
      std::vector<std::byte> f = std::move(waiting[written]);
      write(f);
    }
  };
  auto work = [&] {
    std::vector<std::byte> frame;  // reused while frames are written in order
    for (size_t i; !failed && (i = next++) < waiting.size();) {
      try {
        encode_tensor(m.tensors[i], data[i], o.level, frame);
        flush(i, frame);
      } catch (...) {
        if (!failed.exchange(true)) error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  const size_t helpers = std::min<size_t>(static_cast<size_t>(o.threads), waiting.size()) - (waiting.empty() ? 0 : 1);
  for (size_t t = 0; t < helpers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  return end;
}

}  // namespace

WriteStats write_checkpoint(const std::string& path, Manifest manifest, const std::vector<std::span<const std::byte>>& data,
                            const WriteOptions& options) {
  const std::string what = "checkpoint '" + path + "'";
  if (options.level < 1 || options.level > 19) {
    ir::fail(ir::ErrorCode::InvalidArgument, what + ": compression level " + std::to_string(options.level) + " is not in 1 .. 19");
  }
  if (options.threads < 1) {
    ir::fail(ir::ErrorCode::InvalidArgument, what + ": compression threads " + std::to_string(options.threads) + " must be >= 1");
  }
  if (data.size() != manifest.tensors.size()) ir::fail(ir::ErrorCode::Internal, what + ": one data span per tensor needed");
  WriteStats stats;
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i].size() != manifest.tensors[i].bytes()) {
      ir::fail(ir::ErrorCode::InvalidArgument, what + ": tensor '" + manifest.tensors[i].name + "' has " +
                                                   std::to_string(data[i].size()) + " bytes, expected " +
                                                   std::to_string(manifest.tensors[i].bytes()));
    }
    stats.uncompressed_bytes += data[i].size();
  }
  Header h;
  h.manifest_bytes = manifest_bound(manifest);
  h.data_begin = kHeaderBytes + h.manifest_bytes;
  AtomicFile file(path);
  h.file_size = write_frames(manifest, data, options, file, h.data_begin);
  std::string json = to_json(manifest);
  if (json.size() > h.manifest_bytes) ir::fail(ir::ErrorCode::Internal, what + ": the manifest outgrew its bound");
  json.resize(h.manifest_bytes, ' ');
  const auto header = encode_header(h, json);
  file.write_at(0, header.data(), header.size());
  file.write_at(header.size(), json.data(), json.size());
  file.commit();
  stats.file_bytes = h.file_size;
  return stats;
}

CheckpointReader::CheckpointReader(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) ir::fail(ir::ErrorCode::Io, "checkpoint '" + path_ + "': cannot open (" + std::strerror(errno) + ")");
  try {
    open_checked();
  } catch (...) {  // the destructor does not run for an object whose constructor threw
    ::close(fd_);
    throw;
  }
}

void CheckpointReader::open_checked() {
  const std::string what = "checkpoint '" + path_ + "'";
  struct stat st {};
  if (::fstat(fd_, &st) != 0) ir::fail(ir::ErrorCode::Io, what + ": cannot stat (" + std::strerror(errno) + ")");
  file_size_ = static_cast<uint64_t>(st.st_size);
  if (file_size_ < kHeaderBytes) {
    ir::fail(ir::ErrorCode::BadFormat, what + ": " + std::to_string(file_size_) + " bytes, shorter than the 64-byte header (truncated or not a checkpoint)");
  }
  std::byte header[kHeaderBytes];
  read_at(0, header, kHeaderBytes);
  const Header h = decode_header(header, file_size_, what);
  std::string json(h.manifest_bytes, '\0');
  read_at(kHeaderBytes, reinterpret_cast<std::byte*>(json.data()), json.size());
  verify_header_crc(header, json, what);
  manifest_ = parse_manifest(json, h.data_begin, file_size_, what);
}

CheckpointReader::~CheckpointReader() {
  if (fd_ >= 0) ::close(fd_);
}

void CheckpointReader::read_at(uint64_t offset, std::byte* out, uint64_t bytes) const {
  while (bytes > 0) {
    const ssize_t n = ::pread(fd_, out, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ir::fail(ir::ErrorCode::Io, "checkpoint '" + path_ + "': cannot read " + std::to_string(bytes) + " bytes at " +
                                      std::to_string(offset) + (n < 0 ? std::string(" (") + std::strerror(errno) + ")" : " (end of file)"));
    }
    out += n;
    offset += static_cast<uint64_t>(n);
    bytes -= static_cast<uint64_t>(n);
  }
}

const TensorEntry* CheckpointReader::find(const std::string& name) const {
  for (const TensorEntry& e : manifest_.tensors) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

std::vector<std::byte> CheckpointReader::read(const TensorEntry& entry) const {
  std::vector<std::byte> frame(entry.size);  // within the file: the manifest was checked
  read_at(entry.offset, frame.data(), frame.size());
  const std::string what = "checkpoint '" + path_ + "'";
  check_frame(entry, frame, what);
  // A zstd block decodes to at most 128 KiB and takes at least 4 bytes: a frame's recorded
  // content size may claim more than it can hold (16 GiB in 17 bytes).
  if (entry.bytes() / 32768 > frame.size()) {
    ir::fail(ir::ErrorCode::BadFormat, what + ": tensor '" + entry.name + "': its zstd frame of " + std::to_string(frame.size()) +
                                           " bytes cannot hold the " + std::to_string(entry.bytes()) + " bytes it records (damaged)");
  }
  std::vector<std::byte> out;
  try {
    out.resize(entry.bytes());
  } catch (const std::bad_alloc&) {
    ir::fail(ir::ErrorCode::BadFormat, what + ": tensor '" + entry.name + "' claims " + std::to_string(entry.bytes()) +
                                           " bytes, more than this process can allocate");
  }
  decode_tensor(entry, frame, out, what);
  return out;
}

}  // namespace plexus::checkpoint
