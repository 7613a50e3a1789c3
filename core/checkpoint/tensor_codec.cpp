#include "core/checkpoint/tensor_codec.h"

#include <zstd.h>

#include <memory>
#include <optional>

#include "core/checkpoint/byte_shuffle.h"
#include "core/checkpoint/crc32.h"
#include "core/ir/error.h"

namespace plexus::checkpoint {

namespace {

struct FreeCCtx {
  void operator()(ZSTD_CCtx* c) const noexcept { ZSTD_freeCCtx(c); }
};
struct FreeDCtx {
  void operator()(ZSTD_DCtx* d) const noexcept { ZSTD_freeDCtx(d); }
};

void check_zstd(size_t rc, const std::string& what) {
  if (ZSTD_isError(rc)) ir::fail(ir::ErrorCode::Internal, what + ": zstd: " + ZSTD_getErrorName(rc));
}

// One compression and one decompression context per thread, reset for every tensor: a new
// context per tensor cost 9-11 % of a save's compression (bench/README.md, checkpoint_bench).
ZSTD_CCtx* thread_cctx(const std::string& what) {
  thread_local std::unique_ptr<ZSTD_CCtx, FreeCCtx> ctx(ZSTD_createCCtx());
  if (!ctx) ir::fail(ir::ErrorCode::Internal, what + ": zstd cannot create a compression context");
  check_zstd(ZSTD_CCtx_reset(ctx.get(), ZSTD_reset_session_only), what);
  return ctx.get();
}

ZSTD_DCtx* thread_dctx(const std::string& what) {
  thread_local std::unique_ptr<ZSTD_DCtx, FreeDCtx> ctx(ZSTD_createDCtx());
  if (!ctx) ir::fail(ir::ErrorCode::Internal, what + ": zstd cannot create a decompression context");
  check_zstd(ZSTD_DCtx_reset(ctx.get(), ZSTD_reset_session_and_parameters), what);
  return ctx.get();
}

// The byte-shuffled copy of a tensor during one encode or decode, in a buffer per thread:
// not zero-filled, and kept for the next tensor up to kKeptBytes (a larger one is freed).
class ShuffleScratch {
 public:
  explicit ShuffleScratch(size_t bytes) {
    Buffer& b = buffer();
    if (bytes > b.capacity) {
      b.data.reset(new std::byte[bytes]);
      b.capacity = bytes;
    }
    data_ = b.data.get();
  }
  ~ShuffleScratch() {
    Buffer& b = buffer();
    if (b.capacity > kKeptBytes) {
      b.data.reset();
      b.capacity = 0;
    }
  }
  ShuffleScratch(const ShuffleScratch&) = delete;
  ShuffleScratch& operator=(const ShuffleScratch&) = delete;
  std::byte* data() const { return data_; }

 private:
  static constexpr size_t kKeptBytes = size_t{64} << 20;
  struct Buffer {
    std::unique_ptr<std::byte[]> data;
    size_t capacity = 0;
  };
  static Buffer& buffer() {
    thread_local Buffer b;
    return b;
  }
  std::byte* data_;
};

}  // namespace

void encode_tensor(TensorEntry& entry, std::span<const std::byte> data, int level, std::vector<std::byte>& frame) {
  const std::string what = "checkpoint tensor '" + entry.name + "'";
  entry.crc32 = crc32_of(data);
  std::optional<ShuffleScratch> shuffled;
  if (entry.shuffle) {
    shuffled.emplace(data.size());
    byte_shuffle(data.data(), shuffled->data(), data.size(), ir::dtype_size(entry.dtype));
    data = {shuffled->data(), data.size()};
  }
  ZSTD_CCtx* ctx = thread_cctx(what);
  check_zstd(ZSTD_CCtx_setParameter(ctx, ZSTD_c_compressionLevel, level), what);
  check_zstd(ZSTD_CCtx_setParameter(ctx, ZSTD_c_checksumFlag, 1), what);
  check_zstd(ZSTD_CCtx_setParameter(ctx, ZSTD_c_contentSizeFlag, 1), what);
  frame.resize(ZSTD_compressBound(data.size()));  // zero-fills only beyond its last size
  const size_t n = ZSTD_compress2(ctx, frame.data(), frame.size(), data.data(), data.size());
  check_zstd(n, what);
  frame.resize(n);
  entry.size = n;
}

void check_frame(const TensorEntry& entry, std::span<const std::byte> frame, const std::string& what) {
  auto bad = [&](const std::string& message) {
    ir::fail(ir::ErrorCode::BadFormat, what + ": tensor '" + entry.name + "': " + message);
  };
  const size_t frame_size = ZSTD_findFrameCompressedSize(frame.data(), frame.size());
  if (ZSTD_isError(frame_size) || frame_size != frame.size()) bad("its data is not one complete zstd frame (damaged)");
  const unsigned long long content = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (content == ZSTD_CONTENTSIZE_UNKNOWN || content == ZSTD_CONTENTSIZE_ERROR) bad("its zstd frame does not record its size (damaged)");
  if (content != entry.bytes()) {
    bad("its zstd frame holds " + std::to_string(content) + " bytes, the manifest says " + std::to_string(entry.bytes()));
  }
}

void decode_tensor(const TensorEntry& entry, std::span<const std::byte> frame, std::span<std::byte> out,
                   const std::string& what) {
  const std::string who = what + ": tensor '" + entry.name + "'";
  auto bad = [&](const std::string& message) { ir::fail(ir::ErrorCode::BadFormat, who + ": " + message); };
  if (out.size() != entry.bytes()) {
    ir::fail(ir::ErrorCode::Internal, who + ": output buffer of " + std::to_string(out.size()) + " bytes");
  }
  check_frame(entry, frame, what);
  std::optional<ShuffleScratch> shuffled;
  if (entry.shuffle) shuffled.emplace(out.size());
  const std::span<std::byte> target = shuffled ? std::span<std::byte>(shuffled->data(), out.size()) : out;
  const size_t n = ZSTD_decompressDCtx(thread_dctx(who), target.data(), target.size(), frame.data(), frame.size());
  if (ZSTD_isError(n)) bad(std::string("zstd cannot decompress it (") + ZSTD_getErrorName(n) + ")");
  if (n != target.size()) bad("it decompresses to " + std::to_string(n) + " bytes, expected " + std::to_string(target.size()));
  if (shuffled) byte_unshuffle(shuffled->data(), out.data(), out.size(), ir::dtype_size(entry.dtype));
  if (crc32_of(out) != entry.crc32) bad("its crc32 does not match the manifest (damaged data)");
}

}  // namespace plexus::checkpoint
