// Tests of core/data/idx_reader: small IDX files written here, raw and gzipped, read back;
// every refusal is an ir::Error of the right code whose message names the file.
#include "core/data/idx_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/ir/error.h"
#include "tests/error_of.h"

namespace plexus::data {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

using Bytes = std::vector<unsigned char>;

void append_be32(Bytes& out, uint32_t v) {
  out.push_back(static_cast<unsigned char>(v >> 24));
  out.push_back(static_cast<unsigned char>(v >> 16));
  out.push_back(static_cast<unsigned char>(v >> 8));
  out.push_back(static_cast<unsigned char>(v));
}

// An IDX header: two zero bytes, the element-type byte, the rank, one big-endian u32 per dim.
Bytes header(unsigned char type, const std::vector<uint32_t>& dims) {
  Bytes out = {0, 0, type, static_cast<unsigned char>(dims.size())};
  for (uint32_t d : dims) append_be32(out, d);
  return out;
}

Bytes idx_u8(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& values) {
  Bytes out = header(0x08, dims);
  out.insert(out.end(), values.begin(), values.end());
  return out;
}

Bytes idx_i32(const std::vector<uint32_t>& dims, const std::vector<int32_t>& values) {
  Bytes out = header(0x0C, dims);
  for (int32_t v : values) append_be32(out, static_cast<uint32_t>(v));
  return out;
}

Bytes idx_f32(const std::vector<uint32_t>& dims, const std::vector<float>& values) {
  Bytes out = header(0x0D, dims);
  for (float v : values) append_be32(out, std::bit_cast<uint32_t>(v));
  return out;
}

template <class T>
std::vector<T> elements(const IdxArray& a) {
  std::vector<T> out(a.data.size() / sizeof(T));
  std::memcpy(out.data(), a.data.data(), out.size() * sizeof(T));
  return out;
}

using plexus::test::error_of;

#define EXPECT_IDX_ERROR(expr, want, ...)                                              \
  do {                                                                                 \
    const ir::Error e_ = error_of([&] { (void)(expr); });                              \
    EXPECT_EQ(static_cast<int>(e_.code()), static_cast<int>(want))                     \
        << "ir::ErrorCode values; message: " << e_.what() << "\n  from: " #expr;       \
    for (const std::string& part_ : std::initializer_list<std::string>{__VA_ARGS__}) { \
      EXPECT_THAT(e_.what(), HasSubstr(part_)) << "from: " #expr;                      \
    }                                                                                  \
  } while (0)

class IdxReader : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("plexus_idx_" + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string write(const std::string& name, const Bytes& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    EXPECT_TRUE(f.good()) << path;
    return path;
  }

  std::string write_gz(const std::string& name, const Bytes& bytes) {
    const std::string path = (dir_ / name).string();
    gzFile f = gzopen(path.c_str(), "wb9");
    EXPECT_NE(f, nullptr) << path;
    if (f == nullptr) return path;
    EXPECT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
    EXPECT_EQ(gzclose(f), Z_OK);
    return path;
  }

  Bytes read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }

  fs::path dir_;
};

// ---- Reading ---------------------------------------------------------------------------

TEST_F(IdxReader, ReadsUint8) {
  std::vector<uint8_t> pixels(2 * 3 * 4);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(250 - i * 7);
  const std::string path = write("images-idx3-ubyte", idx_u8({2, 3, 4}, pixels));
  const IdxArray a = read_idx(path);
  EXPECT_EQ(a.path, path);
  EXPECT_EQ(a.dtype, ir::DType::UInt8);
  EXPECT_EQ(a.shape, (ir::Shape{2, 3, 4}));
  EXPECT_EQ(elements<uint8_t>(a), pixels);
}

TEST_F(IdxReader, ReadsInt32BigEndianIntoHostOrder) {
  const std::vector<int32_t> values = {1, -2, 0x01020304, INT32_MIN, INT32_MAX, 0};
  const std::string path = write("ints", idx_i32({3, 2}, values));
  const IdxArray a = read_idx(path);
  EXPECT_EQ(a.dtype, ir::DType::Int32);
  EXPECT_EQ(a.shape, (ir::Shape{3, 2}));
  EXPECT_EQ(elements<int32_t>(a), values);
  // On disk the first element is 00 00 00 01 (big-endian), in memory it is the int 1.
  const Bytes raw = read_file(path);
  EXPECT_EQ(raw[4 + 2 * 4 + 3], 0x01);
}

TEST_F(IdxReader, ReadsFloat32) {
  const std::vector<float> values = {1.5f, -2.25f, 0.0f, 3.0e-38f, 65504.0f};
  const IdxArray a = read_idx(write("floats", idx_f32({5}, values)));
  EXPECT_EQ(a.dtype, ir::DType::Float32);
  EXPECT_EQ(a.shape, (ir::Shape{5}));
  EXPECT_EQ(elements<float>(a), values);
}

TEST_F(IdxReader, ReadsGzippedFilesLikeRawOnes) {
  std::vector<uint8_t> pixels(5 * 7 * 7);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>((i * 31) % 256);
  const Bytes bytes = idx_u8({5, 7, 7}, pixels);
  const IdxArray raw = read_idx(write("images", bytes));
  const std::string gz_path = write_gz("images.gz", bytes);
  const Bytes on_disk = read_file(gz_path);
  ASSERT_GE(on_disk.size(), 2u);
  ASSERT_EQ(on_disk[0], 0x1f) << "the file really is gzip";
  ASSERT_EQ(on_disk[1], 0x8b);
  const IdxArray gz = read_idx(gz_path);
  EXPECT_EQ(gz.dtype, raw.dtype);
  EXPECT_EQ(gz.shape, raw.shape);
  EXPECT_EQ(gz.data, raw.data);

  const std::vector<int32_t> ints = {7, -7, 1 << 20};
  const IdxArray gz_ints = read_idx(write_gz("ints.gz", idx_i32({3}, ints)));
  EXPECT_EQ(elements<int32_t>(gz_ints), ints);
  const std::vector<float> floats = {0.25f, -8.0f};
  EXPECT_EQ(elements<float>(read_idx(write_gz("floats.gz", idx_f32({2}, floats)))), floats);
}

TEST_F(IdxReader, ReadsADataset) {
  std::vector<uint8_t> pixels(4 * 2 * 2, 9);
  const std::string images = write("images", idx_u8({4, 2, 2}, pixels));
  const std::string labels = write_gz("labels.gz", idx_u8({4}, {3, 1, 4, 1}));
  const IdxDataset ds = read_idx_dataset(images, labels);
  EXPECT_EQ(ds.num_samples(), 4);
  EXPECT_EQ(ds.images.shape, (ir::Shape{4, 2, 2}));
  EXPECT_EQ(ds.labels.shape, (ir::Shape{4}));
  EXPECT_EQ(elements<uint8_t>(ds.labels), (std::vector<uint8_t>{3, 1, 4, 1}));
}

// ---- Refusals --------------------------------------------------------------------------

TEST_F(IdxReader, MissingFileIsIo) {
  const std::string path = (dir_ / "no-such-file-idx1-ubyte").string();
  EXPECT_IDX_ERROR(read_idx(path), ir::ErrorCode::Io, path, "cannot open");
  const std::string labels = write("labels", idx_u8({1}, {0}));
  EXPECT_IDX_ERROR(read_idx_dataset(path, labels), ir::ErrorCode::Io, path);
  EXPECT_IDX_ERROR(read_idx_dataset(labels, path), ir::ErrorCode::Io, path);
}

TEST_F(IdxReader, WrongMagic) {
  Bytes bytes = idx_u8({2}, {1, 2});
  bytes[0] = 0x12;
  bytes[1] = 0x34;
  const std::string path = write("wrong-magic", bytes);
  EXPECT_IDX_ERROR(read_idx(path), ir::ErrorCode::BadFormat, path, "wrong magic number");
  bytes[0] = 0;  // only the second byte wrong
  EXPECT_IDX_ERROR(read_idx(write("wrong-magic-2", bytes)), ir::ErrorCode::BadFormat, "wrong magic number");
  // A text file is no IDX file either.
  const std::string text = write("text", Bytes{'h', 'e', 'l', 'l', 'o', '\n'});
  EXPECT_IDX_ERROR(read_idx(text), ir::ErrorCode::BadFormat, text, "wrong magic number");
}

TEST_F(IdxReader, UnsupportedElementType) {
  for (unsigned char type : {0x09, 0x0B, 0x0E, 0x00, 0xFF}) {
    Bytes bytes = header(type, {2});
    bytes.insert(bytes.end(), 8, 0);
    const std::string path = write("type", bytes);
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", type);
    EXPECT_IDX_ERROR(read_idx(path), ir::ErrorCode::BadFormat, path, std::string("element type ") + hex,
                     "not supported");
  }
}

TEST_F(IdxReader, BadRankAndZeroDim) {
  const std::string zero = write("zero-dim", idx_u8({3, 0, 2}, {}));
  EXPECT_IDX_ERROR(read_idx(zero), ir::ErrorCode::BadFormat, zero, "dim 1 is 0");
  const std::string rank0 = write("rank0", header(0x08, {}));
  EXPECT_IDX_ERROR(read_idx(rank0), ir::ErrorCode::BadFormat, rank0, "rank 0");
  Bytes deep = header(0x08, std::vector<uint32_t>(9, 1));
  deep.push_back(0);
  const std::string rank9 = write("rank9", deep);
  EXPECT_IDX_ERROR(read_idx(rank9), ir::ErrorCode::BadFormat, rank9, "rank 9");
  // 2^16 x 2^16 x 2^16 int32 elements would be 1 TiB: refused before allocating anything.
  const std::string huge = write("huge", header(0x0C, {1u << 16, 1u << 16, 1u << 16}));
  EXPECT_IDX_ERROR(read_idx(huge), ir::ErrorCode::BadFormat, huge, "4 GiB");
}

TEST_F(IdxReader, TruncatedFiles) {
  const Bytes full = idx_u8({3, 4}, std::vector<uint8_t>(12, 1));
  const std::string data = write("truncated-data", Bytes(full.begin(), full.end() - 5));
  EXPECT_IDX_ERROR(read_idx(data), ir::ErrorCode::BadFormat, data, "truncated", "declares 12 bytes", "only 7 follow");
  const std::string head = write("truncated-header", Bytes(full.begin(), full.begin() + 7));
  EXPECT_IDX_ERROR(read_idx(head), ir::ErrorCode::BadFormat, head, "header is truncated");
  const std::string magic = write("truncated-magic", Bytes{0, 0});
  EXPECT_IDX_ERROR(read_idx(magic), ir::ErrorCode::BadFormat, magic, "shorter than the 4-byte magic");
  const std::string empty = write("empty", Bytes{});
  EXPECT_IDX_ERROR(read_idx(empty), ir::ErrorCode::BadFormat, empty);
  const std::string gz = write_gz("truncated-data.gz", Bytes(full.begin(), full.end() - 1));
  EXPECT_IDX_ERROR(read_idx(gz), ir::ErrorCode::BadFormat, gz, "truncated", "only 11 follow");
}

// The highest resident memory this process has had, in KiB.
long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// Found by the IDX reader fuzzer (tests/data/fuzz): a file of a few bytes declaring 4 GiB
// of data made read_idx allocate and zero all of it before finding it truncated.
TEST_F(IdxReader, ShortFileDeclaringGigabytesIsRefusedWithoutAllocatingThem) {
  const Bytes bytes = idx_u8({0xFFFFFFFFu}, {1, 2, 3});
  const std::string raw = write("declares-4gib", bytes);
  const std::string gz = write_gz("declares-4gib.gz", bytes);
  const long before = peak_rss_kib();
  EXPECT_IDX_ERROR(read_idx(raw), ir::ErrorCode::BadFormat, raw, "declares 4294967295 bytes", "only 3 follow");
  EXPECT_IDX_ERROR(read_idx(gz), ir::ErrorCode::BadFormat, gz, "declares 4294967295 bytes", "only 3 follow");
  EXPECT_LT(peak_rss_kib() - before, 256 * 1024) << "KiB of resident memory more than before the reads";
}

// The data is read in growing chunks (1 MiB first): files past a chunk are read whole, and
// refused as truncated with the right count when they end inside a later chunk.
TEST_F(IdxReader, ReadsAndRefusesFilesLargerThanTheFirstChunk) {
  std::vector<uint8_t> pixels(3u << 20);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i % 251);
  const Bytes bytes = idx_u8({3, 1024, 1024}, pixels);
  for (const std::string& path : {write("3mib", bytes), write_gz("3mib.gz", bytes)}) {
    const IdxArray a = read_idx(path);
    EXPECT_EQ(a.shape, (ir::Shape{3, 1024, 1024})) << path;
    EXPECT_EQ(elements<uint8_t>(a), pixels) << path;
  }
  const Bytes cut(bytes.begin(), bytes.end() - (1 << 19));
  for (const std::string& path : {write("3mib-cut", cut), write_gz("3mib-cut.gz", cut)}) {
    EXPECT_IDX_ERROR(read_idx(path), ir::ErrorCode::BadFormat, path, "declares 3145728 bytes", "only 2621440 follow");
  }
}

TEST_F(IdxReader, TrailingBytes) {
  Bytes bytes = idx_u8({2, 2}, {1, 2, 3, 4});
  bytes.push_back(5);
  const std::string path = write("trailing", bytes);
  EXPECT_IDX_ERROR(read_idx(path), ir::ErrorCode::BadFormat, path, "unexpected bytes after the 4 bytes of data");
  bytes.insert(bytes.end(), 1000, 0);
  const std::string gz = write_gz("trailing.gz", bytes);
  EXPECT_IDX_ERROR(read_idx(gz), ir::ErrorCode::BadFormat, gz, "unexpected bytes");
}

TEST_F(IdxReader, CorruptGzipStream) {
  std::vector<uint8_t> pixels(4096);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>((i * i) % 251);
  const std::string good = write_gz("good.gz", idx_u8({4096}, pixels));
  Bytes bytes = read_file(good);
  ASSERT_GT(bytes.size(), 64u);
  // Damage the deflate data between the 10-byte gzip header and the 8-byte trailer.
  for (size_t i = bytes.size() / 2; i < bytes.size() / 2 + 16; ++i) bytes[i] ^= 0xA5;
  const std::string corrupt = write("corrupt.gz", bytes);
  EXPECT_IDX_ERROR(read_idx(corrupt), ir::ErrorCode::BadFormat, corrupt, "read failed");

  // A wrong CRC in the trailer: the data inflate fine but fail the check.
  Bytes bad_crc = read_file(good);
  bad_crc[bad_crc.size() - 8] ^= 0xFF;
  const std::string crc = write("bad-crc.gz", bad_crc);
  EXPECT_IDX_ERROR(read_idx(crc), ir::ErrorCode::BadFormat, crc, "read failed");
}

TEST_F(IdxReader, DatasetCountsMustAgree) {
  const std::string images = write("images", idx_u8({3, 2, 2}, std::vector<uint8_t>(12)));
  const std::string labels = write("labels", idx_u8({5}, {0, 1, 2, 3, 4}));
  EXPECT_IDX_ERROR(read_idx_dataset(images, labels), ir::ErrorCode::BadFormat, images, labels, "3 samples", "5 labels");
}

TEST_F(IdxReader, DatasetLabelsMustBeRank1) {
  const std::string images = write("images", idx_u8({3, 2, 2}, std::vector<uint8_t>(12)));
  const std::string labels = write("labels", idx_u8({3, 1}, {0, 1, 2}));
  EXPECT_IDX_ERROR(read_idx_dataset(images, labels), ir::ErrorCode::BadFormat, labels, "[3,1]", "expected one dim");
}

// ---- Real data -------------------------------------------------------------------------

TEST(IdxReaderRealData, MnistTrainingSet) {
  const fs::path dir = fs::path(PLEXUS_SOURCE_DIR) / "data" / "mnist";
  auto find = [&](const std::string& stem) -> std::string {
    for (const std::string& name : {stem, stem + ".gz"}) {
      if (fs::exists(dir / name)) return (dir / name).string();
    }
    return "";
  };
  const std::string images = find("train-images-idx3-ubyte");
  const std::string labels = find("train-labels-idx1-ubyte");
  if (images.empty() || labels.empty()) GTEST_SKIP() << "MNIST is not under " << dir << " (scripts/fetch-data.sh)";
  const IdxDataset ds = read_idx_dataset(images, labels);
  EXPECT_EQ(ds.num_samples(), 60000);
  EXPECT_EQ(ds.images.dtype, ir::DType::UInt8);
  EXPECT_EQ(ds.images.shape, (ir::Shape{60000, 28, 28}));
  EXPECT_EQ(ds.labels.dtype, ir::DType::UInt8);
  EXPECT_EQ(ds.labels.shape, (ir::Shape{60000}));
  ASSERT_EQ(ds.labels.data.size(), 60000u);
  EXPECT_EQ(static_cast<int>(ds.labels.data[0]), 5);
  for (std::byte label : ds.labels.data) ASSERT_LE(static_cast<int>(label), 9);
}

}  // namespace
}  // namespace plexus::data
