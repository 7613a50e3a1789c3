// Helpers shared by the checkpoint tests: a temporary directory per test, whole-file
// reads and writes, tensor entries and their bytes.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "core/checkpoint/manifest.h"
#include "core/ir/dtype.h"
#include "core/ir/shape.h"

namespace plexus::checkpoint::test_util {

/// A fresh directory under the test's temporary directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = ::testing::TempDir() + "plexus-checkpoint-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp(" << pattern << ") failed";
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::vector<std::byte> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  const std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  if (!chars.empty()) std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

inline void write_bytes(const std::string& path, std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

inline std::vector<std::byte> to_bytes(std::string_view s) {
  std::vector<std::byte> out(s.size());
  if (!s.empty()) std::memcpy(out.data(), s.data(), s.size());
  return out;
}

/// Deterministic, moderately compressible contents for `e`: element i of the tensor is a
/// function of i and `seed` that suits its dtype (small floats, signed ints, bytes; the
/// other dtypes' elements get bytes).
inline std::vector<std::byte> tensor_data(const TensorEntry& e, uint32_t seed) {
  std::vector<std::byte> out(e.bytes());
  const size_t n = out.size() / ir::dtype_size(e.dtype);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t k = static_cast<uint32_t>(i) * 2654435761u + seed;
    switch (e.dtype) {
      case ir::DType::Float32: {
        const float v = 0.01f * static_cast<float>(static_cast<int32_t>(k % 2001) - 1000) + static_cast<float>(i % 7);
        std::memcpy(out.data() + 4 * i, &v, 4);
        break;
      }
      case ir::DType::Int32: {
        const int32_t v = static_cast<int32_t>(k % 100000) - 50000;
        std::memcpy(out.data() + 4 * i, &v, 4);
        break;
      }
      default:  // uint8, and each byte of the other dtypes' elements
        for (size_t b = 0; b < ir::dtype_size(e.dtype); ++b) {
          out[i * ir::dtype_size(e.dtype) + b] = static_cast<std::byte>((k >> (7 + b)) & 0x3f);
        }
        break;
    }
  }
  return out;
}

/// The little-endian T at byte `at` of `bytes`.
template <class T>
T get_le(const std::vector<std::byte>& bytes, size_t at) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(bytes.at(at + i)) << (8 * i);
  return static_cast<T>(v);
}

/// Stores `value` little-endian at byte `at` of `bytes`.
template <class T>
void put_le(std::vector<std::byte>& bytes, size_t at, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) bytes.at(at + i) = static_cast<std::byte>((static_cast<uint64_t>(value) >> (8 * i)) & 0xff);
}

}  // namespace plexus::checkpoint::test_util
