// Issue 7: a damaged or crafted checkpoint file is refused with ir::Error(BadFormat) and a
// message saying what is wrong, never a crash. Every case starts from a valid file written
// by write_checkpoint; crafted manifests get a valid header checksum (encode_header), so
// that the manifest's own checks are what is tested.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/checkpoint/checkpoint_file.h"
#include "core/checkpoint/header.h"
#include "core/ir/error.h"
#include "tests/checkpoint/checkpoint_test_util.h"

namespace plexus::checkpoint {
namespace {

using nlohmann::json;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using test_util::get_le;
using test_util::put_le;
using test_util::read_bytes;
using test_util::TempDir;
using test_util::tensor_data;
using test_util::write_bytes;

class DamagedFile : public ::testing::Test {
 protected:
  void SetUp() override {
    Manifest m;
    m.step = 5;
    m.counters = {{"epoch", 1}};
    m.tensors.push_back(TensorEntry::variable("w", ir::DType::Float32, {16, 8}, 2, true));
    m.tensors.push_back(TensorEntry::variable("ids", ir::DType::Int32, {100}, 1, false));
    m.tensors.push_back(TensorEntry::variable("pix", ir::DType::UInt8, {3, 5, 7}, 2, true));
    std::vector<std::span<const std::byte>> spans;
    for (size_t i = 0; i < m.tensors.size(); ++i) data_.push_back(tensor_data(m.tensors[i], static_cast<uint32_t>(i)));
    for (const auto& d : data_) spans.emplace_back(d);
    write_checkpoint(dir_.file("good.ckpt"), m, spans, WriteOptions{3, 1});
    good_ = read_bytes(dir_.file("good.ckpt"));
    CheckpointReader r(dir_.file("good.ckpt"));
    entries_ = r.manifest().tensors;
    manifest_bytes_ = get_le<uint64_t>(good_, 16);
    data_begin_ = 64 + manifest_bytes_;
    ASSERT_EQ(get_le<uint64_t>(good_, 24), data_begin_);
    ASSERT_EQ(entries_.size(), 3u);
    ASSERT_EQ(entries_[0].offset, data_begin_);
    path_ = dir_.file("damaged.ckpt");
    prefix_ = "checkpoint '" + path_ + "': ";
  }

  std::string manifest_text() const {
    return std::string(reinterpret_cast<const char*>(good_.data()) + 64, manifest_bytes_);
  }
  std::vector<std::byte> frames() const { return {good_.begin() + static_cast<std::ptrdiff_t>(data_begin_), good_.end()}; }

  // Writes `bytes` as the damaged file, opens it and reads every tensor; the ir::Error that
  // stops this. Accepting the file, or any other exception, fails the test.
  ir::Error refusal(const std::vector<std::byte>& bytes, bool* at_open = nullptr) {
    write_bytes(path_, bytes);
    if (at_open) *at_open = true;
    try {
      CheckpointReader r(path_);
      if (at_open) *at_open = false;
      for (const TensorEntry& e : r.manifest().tensors) r.read(e);
    } catch (const ir::Error& e) {
      return e;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not an ir::Error: " << e.what();
      return ir::Error(ir::ErrorCode::Internal, "");
    }
    ADD_FAILURE() << "the damaged file was accepted";
    return ir::Error(ir::ErrorCode::Internal, "");
  }

  // The message of the BadFormat error for `bytes`, without the "checkpoint '<path>': "
  // prefix (checked).
  std::string bad_format(const std::vector<std::byte>& bytes, bool* at_open = nullptr) {
    const ir::Error e = refusal(bytes, at_open);
    EXPECT_EQ(e.code(), ir::ErrorCode::BadFormat) << e.what();
    const std::string what = e.what();
    EXPECT_THAT(what, StartsWith(prefix_));
    return what.size() >= prefix_.size() ? what.substr(prefix_.size()) : what;
  }

  // A file with the valid file's frames (and `extra` bytes after them) after `manifest`,
  // with a valid header checksum.
  std::vector<std::byte> with_manifest(const std::string& manifest, const std::vector<std::byte>& extra = {}) const {
    std::vector<std::byte> data = frames();
    data.insert(data.end(), extra.begin(), extra.end());
    Header h;
    h.manifest_bytes = manifest.size();
    h.data_begin = 64 + manifest.size();
    h.file_size = h.data_begin + data.size();
    const auto header = encode_header(h, manifest);
    std::vector<std::byte> out(header.begin(), header.end());
    const std::vector<std::byte> text = test_util::to_bytes(manifest);
    out.insert(out.end(), text.begin(), text.end());
    out.insert(out.end(), data.begin(), data.end());
    return out;
  }

  // The valid manifest edited by `edit`, whose "offset"s are relative to the data section
  // (so that edits need not know the manifest's new length), in a file made by with_manifest.
  std::vector<std::byte> crafted(const std::function<void(json&)>& edit, const std::vector<std::byte>& extra = {}) const {
    json relative = json::parse(manifest_text());
    for (json& t : relative["tensors"]) t["offset"] = t["offset"].get<int64_t>() - static_cast<int64_t>(data_begin_);
    edit(relative);
    auto placed = [&](size_t length) {  // the offsets depend on the manifest's length
      json absolute = relative;
      for (json& t : absolute["tensors"]) t["offset"] = t["offset"].get<int64_t>() + 64 + static_cast<int64_t>(length);
      return absolute.dump();
    };
    // As write_checkpoint does: in the valid file's manifest space, padded with spaces, when
    // it fits.
    std::string text = placed(manifest_bytes_);
    if (text.size() <= manifest_bytes_) return with_manifest(text + std::string(manifest_bytes_ - text.size(), ' '), extra);
    for (size_t length = text.size(); (text = placed(length)).size() != length;) length = text.size();
    return with_manifest(text, extra);
  }

  TempDir dir_;
  std::vector<std::vector<std::byte>> data_;
  std::vector<std::byte> good_;
  std::vector<TensorEntry> entries_;
  uint64_t manifest_bytes_ = 0, data_begin_ = 0;
  std::string path_, prefix_;
};

TEST_F(DamagedFile, TheValidFileAndItsCraftedCopyAreAccepted) {
  // Controls for the cases below: the file reads back, and crafting without an edit
  // reproduces it byte for byte.
  CheckpointReader r(dir_.file("good.ckpt"));
  for (size_t i = 0; i < entries_.size(); ++i) EXPECT_EQ(r.read(r.manifest().tensors[i]), data_[i]);
  EXPECT_EQ(crafted([](json&) {}), good_);
  EXPECT_EQ(with_manifest(manifest_text()), good_);
}

TEST_F(DamagedFile, TruncationAtEveryBoundaryIsRefused) {
  std::vector<size_t> cuts = {0, 8, 63, 64, 64 + manifest_bytes_ / 2, data_begin_};
  for (const TensorEntry& e : entries_) cuts.push_back(e.offset);
  for (const TensorEntry& e : entries_) cuts.push_back(e.offset + e.size / 2);
  cuts.push_back(good_.size() - 1);
  std::mt19937 rng(20261122);
  std::uniform_int_distribution<size_t> offset(0, good_.size() - 1);
  for (int i = 0; i < 20; ++i) cuts.push_back(offset(rng));

  for (size_t cut : cuts) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    bool at_open = false;
    const std::string message = bad_format({good_.begin(), good_.begin() + static_cast<std::ptrdiff_t>(cut)}, &at_open);
    EXPECT_TRUE(at_open);
    if (cut < 64) {
      EXPECT_EQ(message, std::to_string(cut) + " bytes, shorter than the 64-byte header (truncated or not a checkpoint)");
    } else {
      EXPECT_EQ(message, "the header records " + std::to_string(good_.size()) + " bytes but the file has " +
                             std::to_string(cut) + " (truncated)");
    }
  }
}

TEST_F(DamagedFile, TrailingBytesAreRefused) {
  std::vector<std::byte> b = good_;
  b.push_back(std::byte{0});
  EXPECT_EQ(bad_format(b), "the header records " + std::to_string(good_.size()) + " bytes but the file has " +
                               std::to_string(good_.size() + 1) + " (trailing bytes)");
}

TEST_F(DamagedFile, EveryBitFlipInTheHeaderIsRefusedSayingWhichField) {
  for (size_t i = 0; i < 64; ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      SCOPED_TRACE("byte " + std::to_string(i) + " bit " + std::to_string(bit));
      std::vector<std::byte> b = good_;
      b[i] ^= std::byte{static_cast<unsigned char>(1u << bit)};
      bool at_open = false;
      const std::string m = bad_format(b, &at_open);
      EXPECT_TRUE(at_open);
      if (i < 8) {
        EXPECT_EQ(m, "not a Plexus checkpoint (wrong magic number)");
      } else if (i < 12) {
        EXPECT_EQ(m, "checkpoint format version " + std::to_string(1u ^ (1u << (8 * (i - 8) + bit))) +
                         "; this build reads version 1");
      } else if (i < 16) {
        EXPECT_EQ(m, "header size " + std::to_string(64u ^ (1u << (8 * (i - 12) + bit))) + ", expected 64");
      } else if (i < 32) {  // manifest size or data begin
        EXPECT_THAT(m, StartsWith("inconsistent header: manifest "));
      } else if (i < 40) {
        const uint64_t recorded = good_.size() ^ (uint64_t{1} << (8 * (i - 32) + bit));
        EXPECT_EQ(m, "the header records " + std::to_string(recorded) + " bytes but the file has " +
                         std::to_string(good_.size()) + (recorded > good_.size() ? " (truncated)" : " (trailing bytes)"));
      } else if (i < 44) {
        EXPECT_EQ(m, "the header and manifest checksum does not match (the header or the manifest is damaged)");
      } else {
        EXPECT_EQ(m, "reserved header bytes are not zero (header damaged)");
      }
    }
  }
}

TEST_F(DamagedFile, BitFlipsInTheManifestFailTheChecksum) {
  int cases = 0;
  for (size_t i = 64; i < data_begin_; i += 7) {
    SCOPED_TRACE("byte " + std::to_string(i));
    std::vector<std::byte> b = good_;
    b[i] ^= std::byte{static_cast<unsigned char>(1u << (i % 8))};
    bool at_open = false;
    EXPECT_EQ(bad_format(b, &at_open), "the header and manifest checksum does not match (the header or the manifest is damaged)");
    EXPECT_TRUE(at_open);
    ++cases;
  }
  EXPECT_GT(cases, 50);
  // The last manifest byte too.
  std::vector<std::byte> b = good_;
  b[data_begin_ - 1] ^= std::byte{0x02};
  EXPECT_EQ(bad_format(b), "the header and manifest checksum does not match (the header or the manifest is damaged)");
}

TEST_F(DamagedFile, BitFlipsInTheDataAreCaughtWhenTheTensorIsRead) {
  // The header checksum does not cover the frames: the file opens, the other tensors read
  // back intact, and reading the damaged one fails naming it. Every byte of every frame
  // is flipped (all eight bits in each frame header, one bit elsewhere). A few bits of a
  // zstd frame do not change what it decodes to (the frame header's unused bit, some bits
  // of entropy table descriptions): such a flip is undetectable by the content checks
  // (zstd's checksum, the manifest's crc32), and the read must then give the exact bytes.
  std::set<std::string> kinds;
  int refused = 0, intact = 0;
  for (size_t t = 0; t < entries_.size(); ++t) {
    const TensorEntry& damaged = entries_[t];
    for (size_t k = 0; k < damaged.size; ++k) {
      for (int bit = 0; bit < 8; ++bit) {
        if (k >= 8 && bit != static_cast<int>(k % 8)) continue;
        SCOPED_TRACE(damaged.name + " frame byte " + std::to_string(k) + " bit " + std::to_string(bit));
        std::vector<std::byte> b = good_;
        b[damaged.offset + k] ^= std::byte{static_cast<unsigned char>(1u << bit)};
        write_bytes(path_, b);
        CheckpointReader r(path_);  // must not throw
        for (size_t i = 0; i < entries_.size(); ++i) {
          if (i != t) {
            EXPECT_EQ(r.read(r.manifest().tensors[i]), data_[i]);
            continue;
          }
          try {
            EXPECT_EQ(r.read(r.manifest().tensors[i]), data_[i]) << "damaged data read as valid";
            ++intact;
          } catch (const ir::Error& e) {
            ++refused;
            EXPECT_EQ(e.code(), ir::ErrorCode::BadFormat);
            const std::string what = e.what();
            const std::string who = prefix_ + "tensor '" + damaged.name + "': ";
            ASSERT_THAT(what, StartsWith(who));
            const std::string m = what.substr(who.size());
            EXPECT_THAT(m, AnyOf(StartsWith("its data is not one complete zstd frame (damaged)"),
                                 StartsWith("its zstd frame holds "), StartsWith("zstd cannot decompress it ("),
                                 StartsWith("it decompresses to "),
                                 StartsWith("its crc32 does not match the manifest (damaged data)")));
            kinds.insert(m.substr(0, 12));
          }
        }
      }
    }
  }
  EXPECT_GT(refused, 1000);
  EXPECT_LT(intact * 50, refused) << intact << " flips left the data intact";
  EXPECT_GE(kinds.size(), 3u) << "the flips should reach several of the checks";
}

TEST_F(DamagedFile, TheFrameHeadersUnusedBitIsIgnored) {
  // zstd's format: "a decoder compliant with this specification version shall not
  // interpret this bit". Flipping it damages nothing that is read.
  std::vector<std::byte> b = good_;
  b[entries_[0].offset + 4] ^= std::byte{0x10};
  write_bytes(path_, b);
  CheckpointReader r(path_);
  EXPECT_EQ(r.read(r.manifest().tensors[0]), data_[0]);
}

// Entries of /proc/self/fd: the descriptors this process has open (plus the listing's own).
size_t open_descriptors() {
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
                                           std::filesystem::directory_iterator{}));
}

TEST_F(DamagedFile, RefusingAFileClosesIt) {
  // The reader's destructor does not run when its constructor throws; the file must be
  // closed all the same (a process retrying a damaged checkpoint would run out of them).
  const std::vector<std::byte> truncated(good_.begin(), good_.begin() + 100);
  const size_t before = open_descriptors();
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(refusal(truncated).code(), ir::ErrorCode::BadFormat);
    EXPECT_EQ(refusal({good_.begin(), good_.begin() + 10}).code(), ir::ErrorCode::BadFormat);
  }
  { CheckpointReader r(dir_.file("good.ckpt")); }
  EXPECT_EQ(open_descriptors(), before);
}

TEST_F(DamagedFile, WrongMagicIsRefused) {
  std::vector<std::byte> b = good_;
  std::memcpy(b.data(), "NOTACKPT", 8);
  EXPECT_EQ(bad_format(b), "not a Plexus checkpoint (wrong magic number)");
  // A text file of the right size.
  std::vector<std::byte> text(good_.size(), std::byte{'a'});
  EXPECT_EQ(bad_format(text), "not a Plexus checkpoint (wrong magic number)");
}

TEST_F(DamagedFile, AHigherVersionIsRefused) {
  Header h;
  h.version = 2;
  h.manifest_bytes = manifest_bytes_;
  h.data_begin = data_begin_;
  h.file_size = good_.size();
  const auto header = encode_header(h, manifest_text());  // valid checksum
  std::vector<std::byte> b = good_;
  std::copy(header.begin(), header.end(), b.begin());
  EXPECT_EQ(bad_format(b), "checkpoint format version 2; this build reads version 1");
}

TEST_F(DamagedFile, ManifestThatIsNotJsonIsRefused) {
  EXPECT_THAT(bad_format(with_manifest("{\"tensors\": [")), StartsWith("the manifest is not valid JSON ("));
  std::string cut = manifest_text();
  cut.erase(cut.find_last_not_of(' '));  // the closing brace and the padding after it
  EXPECT_THAT(bad_format(with_manifest(cut)), StartsWith("the manifest is not valid JSON ("));
  EXPECT_THAT(bad_format(with_manifest(std::string(5, '\0'))), StartsWith("the manifest is not valid JSON ("));
}

TEST_F(DamagedFile, ManifestThatIsNotAnObjectIsRefused) {
  EXPECT_EQ(bad_format(with_manifest("[1, 2, 3]")), "the manifest is not a JSON object");
  EXPECT_EQ(bad_format(with_manifest("null")), "the manifest is not a JSON object");
}

TEST_F(DamagedFile, DuplicateNamesAreRefused) {
  EXPECT_EQ(bad_format(crafted([](json& j) { j["tensors"][2]["name"] = "w"; })), "tensor 'w' appears twice in the manifest");
}

TEST_F(DamagedFile, OverlappingFramesAreRefused) {
  const auto b = crafted([](json& j) { j["tensors"][1]["offset"] = j["tensors"][1]["offset"].get<int64_t>() - 1; });
  EXPECT_EQ(bad_format(b), "the frames of tensors 'w' and 'ids' overlap");
}

TEST_F(DamagedFile, FramesOutOfRangeAreRefused) {
  // The data section of a crafted file: its manifest may be longer than the valid one.
  auto section = [](const std::vector<std::byte>& b) {
    return " is outside the data section [" + std::to_string(get_le<uint64_t>(b, 24)) + ", " + std::to_string(b.size()) + ")";
  };
  auto frame = [](const std::vector<std::byte>& b, int64_t relative_offset, uint64_t size) {
    return "[" + std::to_string(static_cast<int64_t>(get_le<uint64_t>(b, 24)) + relative_offset) + ", +" +
           std::to_string(size) + ")";
  };
  const int64_t pix = static_cast<int64_t>(entries_[2].offset - data_begin_);
  auto b = crafted([](json& j) { j["tensors"][2]["size"] = j["tensors"][2]["size"].get<int64_t>() + 1; });
  EXPECT_EQ(bad_format(b), "tensor 'pix': its frame " + frame(b, pix, entries_[2].size + 1) + section(b));
  b = crafted([](json& j) { j["tensors"][0]["offset"] = -1; });  // into the manifest
  EXPECT_EQ(bad_format(b), "tensor 'w': its frame " + frame(b, -1, entries_[0].size) + section(b));
  b = crafted([](json& j) { j["tensors"][1]["offset"] = 1 << 20; });  // past the end
  EXPECT_EQ(bad_format(b), "tensor 'ids': its frame " + frame(b, 1 << 20, entries_[1].size) + section(b));
}

TEST_F(DamagedFile, UnknownDtypeIsRefused) {
  EXPECT_EQ(bad_format(crafted([](json& j) { j["tensors"][0]["dtype"] = "float64"; })), "tensor 'w': unknown dtype 'float64'");
}

TEST_F(DamagedFile, NegativeDimIsRefused) {
  EXPECT_EQ(bad_format(crafted([](json& j) { j["tensors"][0]["shape"] = json::array({16, -8}); })),
            "tensor 'w': shape [16,-8] has a dim < 1");
}

TEST_F(DamagedFile, UncompressedSizeMismatchIsRefused) {
  EXPECT_EQ(bad_format(crafted([](json& j) { j["tensors"][1]["uncompressed_size"] = 404; })),
            "tensor 'ids': uncompressed_size 404 does not match rows x shape x dtype (400 bytes)");
}

TEST_F(DamagedFile, AConsistentlyChangedShapeIsCaughtByTheFrameContentSize) {
  // Shape and uncompressed_size agree, so the file opens; the frame holds the old size.
  bool at_open = true;
  const std::string m = bad_format(crafted([](json& j) {
                                     j["tensors"][1]["shape"] = json::array({101});
                                     j["tensors"][1]["uncompressed_size"] = 404;
                                   }),
                                   &at_open);
  EXPECT_FALSE(at_open);
  EXPECT_EQ(m, "tensor 'ids': its zstd frame holds 400 bytes, the manifest says 404");
}

TEST_F(DamagedFile, AChangedCrcIsCaughtWhenTheTensorIsRead) {
  bool at_open = true;
  const std::string m = bad_format(crafted([](json& j) {
                                     j["tensors"][2]["crc32"] = j["tensors"][2]["crc32"].get<uint32_t>() ^ 0x100u;
                                   }),
                                   &at_open);
  EXPECT_FALSE(at_open);
  EXPECT_EQ(m, "tensor 'pix': its crc32 does not match the manifest (damaged data)");
}

TEST_F(DamagedFile, AFrameClaimingMoreThanItCanHoldIsRefusedBeforeAllocating) {
  // 17 bytes of zstd (magic, a single-segment header with an 8-byte content size of 2^34,
  // one 1-byte RLE block) recording 16 GiB: the fuzzer made the reader allocate them.
  const uint64_t claimed = uint64_t{1} << 34;
  std::vector<std::byte> frame;
  for (int b : {0x28, 0xB5, 0x2F, 0xFD}) frame.push_back(std::byte(b));  // the magic, little-endian
  frame.push_back(std::byte{0xE0});
  for (int i = 0; i < 8; ++i) frame.push_back(std::byte((claimed >> (8 * i)) & 0xff));
  for (int b : {0x0B, 0x00, 0x00, 0x00}) frame.push_back(std::byte(b));
  ASSERT_EQ(frame.size(), 17u);
  const auto relative_end = static_cast<int64_t>(frames().size());
  const std::string m = bad_format(crafted(
      [&](json& j) {
        json& t = j["tensors"][1];
        t["dtype"] = "uint8";
        t["shape"] = json::array({claimed});
        t["uncompressed_size"] = claimed;
        t["offset"] = relative_end;
        t["size"] = 17;
      },
      frame));
  EXPECT_EQ(m, "tensor 'ids': its zstd frame of 17 bytes cannot hold the 17179869184 bytes it records (damaged)");
}

TEST_F(DamagedFile, AFramePointingAtAnotherTensorsFrameIsCaught) {
  // 'ids' (400 bytes) given the frame of 'pix' (210 bytes): content sizes differ.
  bool at_open = true;
  const std::string m = bad_format(crafted([&](json& j) {
                                     j["tensors"][1]["offset"] = j["tensors"][2]["offset"];
                                     j["tensors"][1]["size"] = j["tensors"][2]["size"];
                                     j["tensors"][2]["offset"] = entries_[1].offset - data_begin_;
                                     j["tensors"][2]["size"] = entries_[1].size;
                                   }),
                                   &at_open);
  EXPECT_FALSE(at_open);
  EXPECT_EQ(m, "tensor 'ids': its zstd frame holds 210 bytes, the manifest says 400");
}

}  // namespace
}  // namespace plexus::checkpoint
