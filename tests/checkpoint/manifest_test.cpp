#include "core/checkpoint/manifest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/ir/error.h"
#include "tests/checkpoint/checkpoint_test_util.h"

namespace plexus::checkpoint {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr uint64_t kDataBegin = 500, kFileSize = 1000;

Manifest sample() {
  Manifest m;
  m.replication_factor = 4;
  m.step = 123;
  m.counters = {{"epoch", 2}, {"loader_run", -1}};
  m.options = {{"strategy", "replicated"}, {"micro_batches", 3}};
  TensorEntry w = TensorEntry::variable("w", ir::DType::Float32, {3, 4}, 2, true);
  w.group_size = 2;
  w.group_stride = 2;
  w.retrieval = "all_replicas";
  w.shard_over = 4;
  w.padding = 3;
  w.offset = 500;
  w.size = 100;
  w.crc32 = 0xdeadbeef;
  TensorEntry b = TensorEntry::variable("layer.b", ir::DType::Int32, {}, 1);
  b.kind = "remote_variable";
  b.offset = 600;
  b.size = 50;
  b.crc32 = 7;
  TensorEntry s = TensorEntry::variable("slot0", ir::DType::UInt8, {5}, 4);
  s.kind = "remote_buffer_slot";
  s.offset = 650;
  s.size = 350;  // ends at the file's end
  m.tensors = {w, b, s};
  return m;
}

// The manifest of sample() as JSON, edited by `edit`, then parsed; the error it gives.
ir::Error parse_error(const std::function<void(json&)>& edit) {
  json j = json::parse(to_json(sample()));
  edit(j);
  try {
    parse_manifest(j.dump(), kDataBegin, kFileSize, "checkpoint 'm.ckpt'");
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::BadFormat) << e.what();
    return e;
  }
  ADD_FAILURE() << "parse_manifest accepted " << j.dump();
  return ir::Error(ir::ErrorCode::Internal, "");
}

ir::Error parse_text_error(const std::string& text) {
  try {
    parse_manifest(text, kDataBegin, kFileSize, "checkpoint 'm.ckpt'");
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::BadFormat) << e.what();
    return e;
  }
  ADD_FAILURE() << "parse_manifest accepted " << text;
  return ir::Error(ir::ErrorCode::Internal, "");
}

TEST(TensorEntry, BytesIsRowsTimesElementsTimesDtypeSize) {
  EXPECT_EQ(TensorEntry::variable("a", ir::DType::Float32, {3, 4}, 2).bytes(), 96u);
  EXPECT_EQ(TensorEntry::variable("a", ir::DType::Int32, {7}, 1).bytes(), 28u);
  EXPECT_EQ(TensorEntry::variable("a", ir::DType::UInt8, {2, 3, 5}, 3).bytes(), 90u);
  EXPECT_EQ(TensorEntry::variable("a", ir::DType::Float32, {}, 5).bytes(), 20u);  // scalars
}

TEST(Manifest, JsonRoundTripKeepsEveryField) {
  const Manifest m = sample();
  const Manifest p = parse_manifest(to_json(m), kDataBegin, kFileSize, "f");
  EXPECT_EQ(p.replication_factor, 4);
  EXPECT_EQ(p.step, 123);
  EXPECT_EQ(p.counters, m.counters);
  EXPECT_EQ(p.options, m.options);
  ASSERT_EQ(p.tensors.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const TensorEntry &a = m.tensors[i], &b = p.tensors[i];
    EXPECT_EQ(b.name, a.name);
    EXPECT_EQ(b.kind, a.kind);
    EXPECT_EQ(b.dtype, a.dtype);
    EXPECT_EQ(b.shape, a.shape);
    EXPECT_EQ(b.rows, a.rows);
    EXPECT_EQ(b.group_size, a.group_size);
    EXPECT_EQ(b.group_stride, a.group_stride);
    EXPECT_EQ(b.retrieval, a.retrieval);
    EXPECT_EQ(b.shard_over, a.shard_over);
    EXPECT_EQ(b.padding, a.padding);
    EXPECT_EQ(b.shuffle, a.shuffle);
    EXPECT_EQ(b.offset, a.offset);
    EXPECT_EQ(b.size, a.size);
    EXPECT_EQ(b.crc32, a.crc32);
  }
}

TEST(Manifest, JsonSpellsOutTheEntry) {
  const json j = json::parse(to_json(sample()));
  EXPECT_EQ(j["replication_factor"], 4);
  EXPECT_EQ(j["counters"]["epoch"], 2);
  const json& w = j["tensors"][0];
  EXPECT_EQ(w["dtype"], "float32");
  EXPECT_EQ(w["shape"], json::array({3, 4}));
  EXPECT_EQ(w["uncompressed_size"], 96);
  EXPECT_EQ(w["crc32"], 0xdeadbeefu);
  EXPECT_EQ(j["tensors"][1]["dtype"], "int32");
  EXPECT_EQ(j["tensors"][1]["shape"], json::array());
  EXPECT_EQ(j["tensors"][2]["dtype"], "uint8");
}

TEST(Manifest, EmptyTensorListIsFine) {
  Manifest m;
  const Manifest p = parse_manifest(to_json(m), 64, 64, "f");
  EXPECT_TRUE(p.tensors.empty());
  EXPECT_EQ(p.replication_factor, 1);
}

TEST(Manifest, NotJsonIsRefused) {
  EXPECT_THAT(parse_text_error("{\"tensors\": [").what(),
              HasSubstr("checkpoint 'm.ckpt': the manifest is not valid JSON ("));
  EXPECT_THAT(parse_text_error("").what(), HasSubstr("the manifest is not valid JSON ("));
}

TEST(Manifest, JsonThatIsNotAnObjectIsRefused) {
  EXPECT_STREQ(parse_text_error("[1, 2, 3]").what(), "checkpoint 'm.ckpt': the manifest is not a JSON object");
  EXPECT_STREQ(parse_text_error("\"PLEXUSCK\"").what(), "checkpoint 'm.ckpt': the manifest is not a JSON object");
}

TEST(Manifest, MissingAndMistypedTopLevelFieldsAreNamed) {
  EXPECT_STREQ(parse_error([](json& j) { j.erase("step"); }).what(),
               "checkpoint 'm.ckpt': manifest: missing field 'step'");
  EXPECT_STREQ(parse_error([](json& j) { j["counters"] = "none"; }).what(),
               "checkpoint 'm.ckpt': manifest: field 'counters' has the wrong type");
  EXPECT_STREQ(parse_error([](json& j) { j["replication_factor"] = 0; }).what(),
               "checkpoint 'm.ckpt': manifest: field 'replication_factor' must be >= 1, is 0");
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"] = json::object(); }).what(),
               "checkpoint 'm.ckpt': manifest field 'tensors' is not an array");
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][1] = 5; }).what(),
               "checkpoint 'm.ckpt': a tensors[] entry is not an object");
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][1].erase("name"); }).what(),
               "checkpoint 'm.ckpt': a tensors[] entry: missing field 'name'");
}

TEST(Manifest, EntryErrorsNameTheTensor) {
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][0]["kind"] = "constant"; }).what(),
               "checkpoint 'm.ckpt': tensor 'w': unknown kind 'constant'");
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][0]["dtype"] = "float64"; }).what(),
               "checkpoint 'm.ckpt': tensor 'w': unknown dtype 'float64'");
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][0]["dtype"] = 1; }).what(),
               "checkpoint 'm.ckpt': tensor 'w': field 'dtype' has the wrong type");
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][0]["shape"] = json::array({3, -4}); }).what(),
               "checkpoint 'm.ckpt': tensor 'w': shape [3,-4] has a dim < 1");
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][0]["shape"] = json::array({0}); }).what(),
               "checkpoint 'm.ckpt': tensor 'w': shape [0] has a dim < 1");
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][0]["shape"] = "3x4"; }).what(),
               "checkpoint 'm.ckpt': tensor 'w': field 'shape' has the wrong type");
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][0]["rows"] = -2; }).what(),
               "checkpoint 'm.ckpt': tensor 'w': field 'rows' must be >= 1, is -2");
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][0]["group_stride"] = 0; }).what(),
               "checkpoint 'm.ckpt': tensor 'w': field 'group_stride' must be >= 1, is 0");
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][0]["retrieval"] = "some"; }).what(),
               "checkpoint 'm.ckpt': tensor 'w': unknown retrieval mode 'some'");
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][0]["padding"] = 4; }).what(),
               "checkpoint 'm.ckpt': tensor 'w': padding 4 is not in [0, shard_over)");
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][0]["padding"] = -1; }).what(),
               "checkpoint 'm.ckpt': tensor 'w': padding -1 is not in [0, shard_over)");
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][0]["shuffle"] = "yes"; }).what(),
               "checkpoint 'm.ckpt': tensor 'w': field 'shuffle' has the wrong type");
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][0].erase("crc32"); }).what(),
               "checkpoint 'm.ckpt': tensor 'w': missing field 'crc32'");
}

TEST(Manifest, NumbersThatAreNotIntegersAreRefusedNotCast) {
  // nlohmann's get<int64_t>() of a float is a plain cast: undefined out of range (found by
  // the fuzzer), silently truncated within it.
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][0]["rows"] = 1e300; }).what(),
               "checkpoint 'm.ckpt': tensor 'w': field 'rows' has the wrong type");
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][0]["crc32"] = 1.5; }).what(),
               "checkpoint 'm.ckpt': tensor 'w': field 'crc32' has the wrong type");
  EXPECT_STREQ(parse_error([](json& j) { j["counters"]["epoch"] = 1e300; }).what(),
               "checkpoint 'm.ckpt': manifest: field 'counters' has the wrong type");
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][0]["shape"] = json::array({3, 4.0}); }).what(),
               "checkpoint 'm.ckpt': tensor 'w': field 'shape' has the wrong type");
}

TEST(Manifest, Crc32MustFitThirtyTwoBits) {
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][0]["crc32"] = uint64_t{1} << 32; }).what(),
               "checkpoint 'm.ckpt': tensor 'w': crc32 4294967296 does not fit 32 bits");
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][0]["crc32"] = -1; }).what(),
               "checkpoint 'm.ckpt': tensor 'w': crc32 18446744073709551615 does not fit 32 bits");
  json j = json::parse(to_json(sample()));
  j["tensors"][0]["crc32"] = 0xffffffffu;
  EXPECT_EQ(parse_manifest(j.dump(), kDataBegin, kFileSize, "f").tensors[0].crc32, 0xffffffffu);
}

TEST(Manifest, NamesThatAreNotUtf8AreRefusedWhenWriting) {
  Manifest m = sample();
  m.tensors[1].name = "b\xff";
  try {
    to_json(m);
    FAIL();
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), ::testing::StartsWith("checkpoint: a tensor or counter name is not valid UTF-8 ("));
  }
  m = sample();
  m.counters["\xc3("] = 1;
  EXPECT_THROW(to_json(m), ir::Error);
  m = sample();
  m.tensors[1].name = "b\xc3\xa9";  // UTF-8 is fine
  EXPECT_EQ(parse_manifest(to_json(m), kDataBegin, kFileSize, "f").tensors[1].name, "b\xc3\xa9");
}

TEST(Manifest, UncompressedSizeMustMatchTheShape) {
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][0]["uncompressed_size"] = 97; }).what(),
               "checkpoint 'm.ckpt': tensor 'w': uncompressed_size 97 does not match rows x shape x dtype (96 bytes)");
  // A changed shape with the old size is caught the same way.
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][0]["shape"] = json::array({4, 4}); }).what(),
               "checkpoint 'm.ckpt': tensor 'w': uncompressed_size 96 does not match rows x shape x dtype (128 bytes)");
}

TEST(Manifest, ShapesThatOverflowAreRefused) {
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][0]["shape"] = json::array({int64_t{1} << 40, int64_t{1} << 40}); }).what(),
               "checkpoint 'm.ckpt': tensor 'w': shape overflows");
  // 2^61 elements fit in 64 bits, but not 2 rows of them at 8 bytes each.
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][0]["shape"] = json::array({int64_t{1} << 61}); }).what(),
               "checkpoint 'm.ckpt': tensor 'w': size overflows");
}

TEST(Manifest, DuplicateNamesAreRefused) {
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][2]["name"] = "w"; }).what(),
               "checkpoint 'm.ckpt': tensor 'w' appears twice in the manifest");
}

TEST(Manifest, FramesOutsideTheDataSectionAreRefused) {
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][0]["offset"] = 499; }).what(),
               "checkpoint 'm.ckpt': tensor 'w': its frame [499, +100) is outside the data section [500, 1000)");
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][2]["size"] = 351; }).what(),
               "checkpoint 'm.ckpt': tensor 'slot0': its frame [650, +351) is outside the data section [500, 1000)");
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][1]["size"] = 0; }).what(),
               "checkpoint 'm.ckpt': tensor 'layer.b': its frame [600, +0) is outside the data section [500, 1000)");
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][1]["offset"] = 1001; }).what(),
               "checkpoint 'm.ckpt': tensor 'layer.b': its frame [1001, +50) is outside the data section [500, 1000)");
  // offset + size wraps around 2^64: still outside.
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][1]["size"] = ~uint64_t{0} - 100; }).what(),
               "checkpoint 'm.ckpt': tensor 'layer.b': its frame [600, +18446744073709551515) is outside the data section "
               "[500, 1000)");
}

TEST(Manifest, OverlappingFramesAreRefused) {
  EXPECT_STREQ(parse_error([](json& j) { j["tensors"][1]["offset"] = 599; }).what(),
               "checkpoint 'm.ckpt': the frames of tensors 'w' and 'layer.b' overlap");
  // Listed out of file order: the check sorts by offset.
  EXPECT_STREQ(parse_error([](json& j) {
                 j["tensors"][0]["offset"] = 900;
                 j["tensors"][2]["offset"] = 500;
               }).what(),
               "checkpoint 'm.ckpt': the frames of tensors 'slot0' and 'layer.b' overlap");
}

TEST(Manifest, AdjacentFramesInAnyOrderAreFine) {
  json j = json::parse(to_json(sample()));
  j["tensors"][0]["offset"] = 900;   // w: [900, 1000)
  j["tensors"][2]["offset"] = 500;   // slot0: [500, 850)
  j["tensors"][1]["offset"] = 850;   // layer.b: [850, 900)
  const Manifest m = parse_manifest(j.dump(), kDataBegin, kFileSize, "f");
  EXPECT_EQ(m.tensors[0].offset, 900u);
}

}  // namespace
}  // namespace plexus::checkpoint
