#include "core/checkpoint/checkpoint_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "core/checkpoint/crc32.h"
#include "core/checkpoint/header.h"
#include "core/checkpoint/tensor_codec.h"
#include "core/ir/error.h"
#include "tests/checkpoint/checkpoint_test_util.h"

namespace plexus::checkpoint {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using test_util::get_le;
using test_util::read_bytes;
using test_util::TempDir;
using test_util::tensor_data;

// A manifest of every dtype, with multi-row tensors, a scalar and every kind.
Manifest sample_manifest(bool shuffle) {
  Manifest m;
  m.replication_factor = 4;
  m.step = 42;
  m.counters = {{"epoch", 3}, {"batches_seen", 1200}};
  m.options = {{"strategy", "replicated"}};
  m.tensors.push_back(TensorEntry::variable("conv1.w", ir::DType::Float32, {8, 3, 3, 3}, 2, shuffle));
  m.tensors.back().group_size = 2;
  m.tensors.back().group_stride = 2;
  m.tensors.push_back(TensorEntry::variable("conv1.b", ir::DType::Float32, {8}, 1, shuffle));
  m.tensors.push_back(TensorEntry::variable("labels", ir::DType::Int32, {5, 7}, 3, shuffle));
  m.tensors.back().kind = "remote_variable";
  m.tensors.back().retrieval = "all_replicas";
  m.tensors.push_back(TensorEntry::variable("pixels", ir::DType::UInt8, {4, 28, 28}, 4, shuffle));
  m.tensors.back().kind = "remote_buffer_slot";
  m.tensors.push_back(TensorEntry::variable("lr", ir::DType::Float32, {}, 1, shuffle));
  m.tensors.push_back(TensorEntry::variable("fc.w", ir::DType::Float32, {10, 7}, 1, shuffle));
  m.tensors.back().shard_over = 4;
  m.tensors.back().padding = 2;
  return m;
}

struct Written {
  Manifest manifest;
  std::vector<std::vector<std::byte>> data;
  WriteStats stats;
};

Written write_sample(const std::string& path, bool shuffle, int level, int threads = 1) {
  Written w;
  w.manifest = sample_manifest(shuffle);
  std::vector<std::span<const std::byte>> spans;
  for (size_t i = 0; i < w.manifest.tensors.size(); ++i) w.data.push_back(tensor_data(w.manifest.tensors[i], 10 + i));
  for (const auto& d : w.data) spans.emplace_back(d);
  w.stats = write_checkpoint(path, w.manifest, spans, WriteOptions{level, threads});
  return w;
}

class CheckpointRoundTrip : public ::testing::TestWithParam<std::tuple<bool, int>> {};

TEST_P(CheckpointRoundTrip, ReaderGivesBackManifestAndBytes) {
  const auto [shuffle, level] = GetParam();
  TempDir dir;
  const std::string path = dir.file("c.ckpt");
  const Written w = write_sample(path, shuffle, level);

  uint64_t total = 0;
  for (const auto& d : w.data) total += d.size();
  EXPECT_EQ(w.stats.uncompressed_bytes, total);
  EXPECT_EQ(w.stats.file_bytes, fs::file_size(path));

  CheckpointReader r(path);
  EXPECT_EQ(r.path(), path);
  EXPECT_EQ(r.file_size(), w.stats.file_bytes);
  const Manifest& m = r.manifest();
  EXPECT_EQ(m.replication_factor, 4);
  EXPECT_EQ(m.step, 42);
  EXPECT_EQ(m.counters, w.manifest.counters);
  EXPECT_EQ(m.options, w.manifest.options);
  ASSERT_EQ(m.tensors.size(), w.manifest.tensors.size());
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const TensorEntry &got = m.tensors[i], &want = w.manifest.tensors[i];
    SCOPED_TRACE(got.name);
    EXPECT_EQ(got.name, want.name);
    EXPECT_EQ(got.kind, want.kind);
    EXPECT_EQ(got.dtype, want.dtype);
    EXPECT_EQ(got.shape, want.shape);
    EXPECT_EQ(got.rows, want.rows);
    EXPECT_EQ(got.group_size, want.group_size);
    EXPECT_EQ(got.group_stride, want.group_stride);
    EXPECT_EQ(got.retrieval, want.retrieval);
    EXPECT_EQ(got.shard_over, want.shard_over);
    EXPECT_EQ(got.padding, want.padding);
    EXPECT_EQ(got.shuffle, shuffle);
    EXPECT_EQ(got.crc32, crc32_of(w.data[i]));
    EXPECT_EQ(r.read(got), w.data[i]);
  }
}

INSTANTIATE_TEST_SUITE_P(ShuffleAndLevel, CheckpointRoundTrip,
                         ::testing::Combine(::testing::Bool(), ::testing::Values(1, 3, 9)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "Shuffled" : "Plain") + "Level" +
                                  std::to_string(std::get<1>(info.param));
                         });

TEST(CheckpointFile, LayoutIsHeaderManifestThenFramesBackToBack) {
  TempDir dir;
  const std::string path = dir.file("c.ckpt");
  write_sample(path, true, 3);
  const std::vector<std::byte> bytes = read_bytes(path);
  const uint64_t manifest_bytes = get_le<uint64_t>(bytes, 16);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()), 8), "PLEXUSCK");
  EXPECT_EQ(get_le<uint64_t>(bytes, 24), 64 + manifest_bytes);
  EXPECT_EQ(get_le<uint64_t>(bytes, 32), bytes.size());
  EXPECT_EQ(bytes[64], std::byte{'{'});
  // The manifest ends at its closing brace, then spaces: its reserved space's bound is a
  // few bytes per tensor too long (the crc32 and sizes bounded by their widest values).
  const std::string manifest(reinterpret_cast<const char*>(bytes.data()) + 64, manifest_bytes);
  const size_t brace = manifest.rfind('}');
  ASSERT_NE(brace, std::string::npos);
  EXPECT_EQ(manifest.find_first_not_of(' ', brace + 1), std::string::npos);
  CheckpointReader r(path);
  EXPECT_LE(manifest_bytes - brace - 1, 16 * r.manifest().tensors.size());
  uint64_t at = 64 + manifest_bytes;
  for (const TensorEntry& e : r.manifest().tensors) {
    EXPECT_EQ(e.offset, at) << e.name;
    EXPECT_GT(e.size, 0u);
    // Each frame starts with the zstd magic number 0xFD2FB528.
    EXPECT_EQ(get_le<uint32_t>(bytes, e.offset), 0xFD2FB528u) << e.name;
    at += e.size;
  }
  EXPECT_EQ(at, bytes.size());
}

TEST(CheckpointFile, ThreadCountDoesNotChangeTheFile) {
  TempDir dir;
  for (bool shuffle : {false, true}) {
    write_sample(dir.file("t1.ckpt"), shuffle, 3, 1);
    write_sample(dir.file("t3.ckpt"), shuffle, 3, 3);
    write_sample(dir.file("t16.ckpt"), shuffle, 3, 16);  // more threads than tensors
    const std::vector<std::byte> one = read_bytes(dir.file("t1.ckpt"));
    EXPECT_EQ(read_bytes(dir.file("t3.ckpt")), one) << "shuffle " << shuffle;
    EXPECT_EQ(read_bytes(dir.file("t16.ckpt")), one) << "shuffle " << shuffle;
  }
}

TEST(CheckpointFile, HigherLevelsCompressTheSampleNoWorse) {
  TempDir dir;
  const uint64_t l1 = write_sample(dir.file("l1.ckpt"), true, 1).stats.file_bytes;
  const uint64_t l9 = write_sample(dir.file("l9.ckpt"), true, 9).stats.file_bytes;
  EXPECT_LE(l9, l1);
  EXPECT_NE(read_bytes(dir.file("l1.ckpt")), read_bytes(dir.file("l9.ckpt")));
}

TEST(CheckpointFile, EmptyCheckpointRoundTrips) {
  TempDir dir;
  Manifest m;
  m.step = 7;
  const WriteStats s = write_checkpoint(dir.file("e.ckpt"), m, {}, WriteOptions{3, 4});
  EXPECT_EQ(s.uncompressed_bytes, 0u);
  CheckpointReader r(dir.file("e.ckpt"));
  EXPECT_EQ(r.manifest().step, 7);
  EXPECT_TRUE(r.manifest().tensors.empty());
  EXPECT_EQ(r.file_size(), s.file_bytes);
}

TEST(CheckpointFile, FindLooksUpByName) {
  TempDir dir;
  write_sample(dir.file("c.ckpt"), false, 1);
  CheckpointReader r(dir.file("c.ckpt"));
  const TensorEntry* e = r.find("labels");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->dtype, ir::DType::Int32);
  EXPECT_EQ(e->shape, (ir::Shape{5, 7}));
  EXPECT_EQ(e->rows, 3);
  EXPECT_EQ(r.find("label"), nullptr);
}

TEST(CheckpointFile, ConcurrentReadsAgree) {
  TempDir dir;
  const Written w = write_sample(dir.file("c.ckpt"), true, 3);
  CheckpointReader r(dir.file("c.ckpt"));
  std::vector<int> ok(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < ok.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round) {
        for (size_t i = 0; i < w.data.size(); ++i) ok[t] += r.read(r.manifest().tensors[i]) == w.data[i];
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int n : ok) EXPECT_EQ(n, 5 * static_cast<int>(w.data.size()));
}

TEST(CheckpointFile, OverwritingReplacesTheCheckpoint) {
  TempDir dir;
  const std::string path = dir.file("c.ckpt");
  write_sample(path, false, 1);
  Manifest m;
  m.step = 99;
  m.tensors.push_back(TensorEntry::variable("only", ir::DType::UInt8, {3}));
  const std::vector<std::byte> data = {std::byte{1}, std::byte{2}, std::byte{3}};
  write_checkpoint(path, m, {data}, {});
  CheckpointReader r(path);
  EXPECT_EQ(r.manifest().step, 99);
  ASSERT_EQ(r.manifest().tensors.size(), 1u);
  EXPECT_EQ(r.read(r.manifest().tensors[0]), data);
}

ir::Error write_error(const std::string& path, const Manifest& m, const std::vector<std::span<const std::byte>>& data,
                      const WriteOptions& o) {
  try {
    write_checkpoint(path, m, data, o);
  } catch (const ir::Error& e) {
    return e;
  }
  ADD_FAILURE() << "write_checkpoint succeeded";
  return ir::Error(ir::ErrorCode::Internal, "");
}

TEST(CheckpointFile, BadArgumentsAreRefusedAndTheOldFileStays) {
  TempDir dir;
  const std::string path = dir.file("c.ckpt");
  write_sample(path, false, 1);
  const std::vector<std::byte> before = read_bytes(path);
  Manifest m;
  m.tensors.push_back(TensorEntry::variable("w", ir::DType::Float32, {2, 2}));
  const std::vector<std::byte> good(16), short_data(12);

  ir::Error e = write_error(path, m, {good}, WriteOptions{0, 1});
  EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
  EXPECT_EQ(std::string(e.what()), "checkpoint '" + path + "': compression level 0 is not in 1 .. 19");
  e = write_error(path, m, {good}, WriteOptions{20, 1});
  EXPECT_EQ(std::string(e.what()), "checkpoint '" + path + "': compression level 20 is not in 1 .. 19");
  e = write_error(path, m, {good}, WriteOptions{3, 0});
  EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
  EXPECT_EQ(std::string(e.what()), "checkpoint '" + path + "': compression threads 0 must be >= 1");
  e = write_error(path, m, {short_data}, WriteOptions{});
  EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
  EXPECT_EQ(std::string(e.what()), "checkpoint '" + path + "': tensor 'w' has 12 bytes, expected 16");
  e = write_error(path, m, {}, WriteOptions{});
  EXPECT_EQ(e.code(), ir::ErrorCode::Internal);
  EXPECT_EQ(std::string(e.what()), "checkpoint '" + path + "': one data span per tensor needed");

  EXPECT_EQ(read_bytes(path), before);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}), 1);
}

TEST(CheckpointFile, ANameThatIsNotUtf8IsRefusedAndTheOldFileStays) {
  TempDir dir;
  const std::string path = dir.file("c.ckpt");
  write_sample(path, false, 1);
  const std::vector<std::byte> before = read_bytes(path);
  Manifest m;
  m.tensors.push_back(TensorEntry::variable("w\xfe", ir::DType::UInt8, {2}));
  const std::vector<std::byte> data(2);
  const ir::Error e = write_error(path, m, {data}, WriteOptions{});
  EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.what(), HasSubstr("a tensor or counter name is not valid UTF-8"));
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}), 1);
}

TEST(CheckpointFile, WritingIntoAMissingDirectoryIsAnIoError) {
  TempDir dir;
  const std::string path = dir.file("no/such/dir/c.ckpt");
  Manifest m;
  const ir::Error e = write_error(path, m, {}, WriteOptions{});
  EXPECT_EQ(e.code(), ir::ErrorCode::Io);
  EXPECT_THAT(e.what(), HasSubstr("checkpoint '" + path + "': cannot create the temporary file"));
}

TEST(CheckpointFile, OpeningAMissingFileIsAnIoError) {
  TempDir dir;
  const std::string path = dir.file("absent.ckpt");
  try {
    CheckpointReader r(path);
    FAIL();
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::Io);
    EXPECT_EQ(std::string(e.what()), "checkpoint '" + path + "': cannot open (No such file or directory)");
  }
}

}  // namespace
}  // namespace plexus::checkpoint
