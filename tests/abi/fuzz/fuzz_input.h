// The byte format of the C API decoding fuzzer's inputs (c_api_decode_fuzzer.cpp), read by
// the fuzzer and written by its seed corpus program (seed_corpus.cpp), so the two cannot
// drift apart. Values are read from the front: integers little-endian at their full width,
// a string as a length byte and that many bytes (length 0xFF: a NULL pointer), a list as
// a count byte capped by the reader (count 0xFF: a NULL array with a non-zero count). An
// input that runs out reads as zeros, so every input decodes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

namespace plexus::test {

/// The first byte of an input: what it fuzzes.
enum class FuzzMode : uint8_t { SessionOptions = 0, OpAttributes = 1 };

/// A count byte of 0xFF: the array pointer is NULL (and the count 1).
inline constexpr uint8_t kNullArray = 0xFF;
/// A string length byte of 0xFF: the string is NULL.
inline constexpr uint8_t kNullString = 0xFF;

class FuzzInputReader {
 public:
  FuzzInputReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  template <class T>
  T get() {
    T v{};
    uint8_t bytes[sizeof(T)] = {};
    for (size_t i = 0; i < sizeof(T); ++i) bytes[i] = byte();
    std::memcpy(&v, bytes, sizeof(T));  // little-endian hosts only, like the project
    return v;
  }

  /// A string owned by the reader (valid as long as it), or nullptr.
  const char* string() {
    const uint8_t length = byte();
    if (length == kNullString) return nullptr;
    std::string s;
    for (uint8_t i = 0; i < length; ++i) s.push_back(static_cast<char>(byte()));
    return strings_.emplace_back(std::move(s)).c_str();
  }

  /// A count byte: 0..max, or kNullArray as it is.
  uint8_t count(uint8_t max) {
    const uint8_t n = byte();
    return n == kNullArray ? n : std::min(n, max);
  }

 private:
  uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  std::deque<std::string> strings_;  // a deque: c_str() pointers stay valid as it grows
};

class FuzzInputWriter {
 public:
  template <class T>
  FuzzInputWriter& put(T v) {
    uint8_t bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));
    bytes_.insert(bytes_.end(), bytes, bytes + sizeof(T));
    return *this;
  }

  /// A string of at most 254 bytes, or NULL.
  FuzzInputWriter& string(const char* s) {
    if (s == nullptr) return put(kNullString);
    const size_t length = std::min<size_t>(std::strlen(s), kNullString - 1);
    put(static_cast<uint8_t>(length));
    bytes_.insert(bytes_.end(), s, s + length);
    return *this;
  }

  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace plexus::test
