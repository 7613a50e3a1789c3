#include "core/checkpoint/tensor_codec.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <memory>

#include "core/checkpoint/byte_shuffle.h"
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

}  // namespace

uint32_t crc32_of(std::span<const std::byte> data) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t done = 0; done < data.size();) {
    const size_t n = std::min<size_t>(data.size() - done, 1u << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data.data() + done), static_cast<uInt>(n));
    done += n;
  }
  return static_cast<uint32_t>(crc);
}

std::vector<std::byte> encode_tensor(TensorEntry& entry, std::span<const std::byte> data, int level) {
  const std::string what = "checkpoint tensor '" + entry.name + "'";
  entry.crc32 = crc32_of(data);
  std::vector<std::byte> shuffled;
  if (entry.shuffle) {
    shuffled.resize(data.size());
    byte_shuffle(data.data(), shuffled.data(), data.size(), ir::dtype_size(entry.dtype));
    data = shuffled;
  }
  std::unique_ptr<ZSTD_CCtx, FreeCCtx> ctx(ZSTD_createCCtx());
  if (!ctx) ir::fail(ir::ErrorCode::Internal, what + ": zstd cannot create a compression context");
  check_zstd(ZSTD_CCtx_setParameter(ctx.get(), ZSTD_c_compressionLevel, level), what);
  check_zstd(ZSTD_CCtx_setParameter(ctx.get(), ZSTD_c_checksumFlag, 1), what);
  check_zstd(ZSTD_CCtx_setParameter(ctx.get(), ZSTD_c_contentSizeFlag, 1), what);
  std::vector<std::byte> frame(ZSTD_compressBound(data.size()));
  const size_t n = ZSTD_compress2(ctx.get(), frame.data(), frame.size(), data.data(), data.size());
  check_zstd(n, what);
  frame.resize(n);
  entry.size = n;
  return frame;
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
  std::vector<std::byte> shuffled(entry.shuffle ? out.size() : 0);
  std::span<std::byte> target = entry.shuffle ? std::span<std::byte>(shuffled) : out;
  std::unique_ptr<ZSTD_DCtx, FreeDCtx> ctx(ZSTD_createDCtx());
  if (!ctx) ir::fail(ir::ErrorCode::Internal, who + ": zstd cannot create a decompression context");
  const size_t n = ZSTD_decompressDCtx(ctx.get(), target.data(), target.size(), frame.data(), frame.size());
  if (ZSTD_isError(n)) bad(std::string("zstd cannot decompress it (") + ZSTD_getErrorName(n) + ")");
  if (n != target.size()) bad("it decompresses to " + std::to_string(n) + " bytes, expected " + std::to_string(target.size()));
  if (entry.shuffle) byte_unshuffle(shuffled.data(), out.data(), out.size(), ir::dtype_size(entry.dtype));
  if (crc32_of(out) != entry.crc32) bad("its crc32 does not match the manifest (damaged data)");
}

}  // namespace plexus::checkpoint
