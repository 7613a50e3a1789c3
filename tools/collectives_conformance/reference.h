// Test data and the serial reference the plugin's results are compared with.
//
// Inputs are deterministic per (seed, replica, index). Floats mix magnitudes (2^-12 to
// 2^12) so that float sums depend on the order of the additions: the reference reduces
// in member order, as the ABI requires of every plugin, so results are compared bit for
// bit. int32 values lie in [-2^27, 2^27) so sums of up to 8 members never overflow; mean
// truncates toward zero (negative values included).
#ifndef PLEXUS_TESTS_PLUGINS_CONFORMANCE_REFERENCE_H
#define PLEXUS_TESTS_PLUGINS_CONFORMANCE_REFERENCE_H

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "plexus/collectives_plugin.h"

namespace conformance {

inline uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

template <typename T>
T value_from_hash(uint64_t h) {
  const auto small = static_cast<int32_t>(h >> 38) - (1 << 25);  // [-2^25, 2^25)
  if constexpr (std::is_same_v<T, float>) {
    // small / 2^25 in [-1, 1), times 2^e for e in {-12, -8, ..., 12}: exact, varied magnitudes.
    static constexpr float kScales[8] = {0x1p-37f, 0x1p-33f, 0x1p-29f, 0x1p-25f,
                                         0x1p-21f, 0x1p-17f, 0x1p-13f, 0x1p-25f};
    return static_cast<float>(small) * kScales[h & 7];
  } else {
    return static_cast<int32_t>(small * 4);  // [-2^27, 2^27)
  }
}

template <typename T>
std::vector<T> make_values(uint64_t seed, int64_t replica, size_t count) {
  std::vector<T> values(count);
  const uint64_t stream = mix(seed * 0x100000001B3ull + static_cast<uint64_t>(replica));
  for (size_t i = 0; i < count; ++i) values[i] = value_from_hash<T>(mix(stream + i));
  return values;
}

template <typename T>
constexpr plx_dtype dtype_of() {
  return std::is_same_v<T, float> ? PLX_DTYPE_FLOAT32 : PLX_DTYPE_INT32;
}

/** out[i] = op over inputs[m][offset + i] for m = 0, 1, ... (member order), i < count. */
template <typename T>
std::vector<T> reduce_reference(const std::vector<const T*>& inputs, size_t offset, size_t count,
                                plx_reduce_op op) {
  using Acc = std::conditional_t<std::is_same_v<T, float>, float, int64_t>;
  std::vector<T> out(count);
  for (size_t i = 0; i < count; ++i) {
    Acc acc = inputs[0][offset + i];
    for (size_t m = 1; m < inputs.size(); ++m) {
      const Acc next = inputs[m][offset + i];
      if (op == PLX_REDUCE_SUM || op == PLX_REDUCE_MEAN) acc = acc + next;
      if (op == PLX_REDUCE_MAX) acc = next > acc ? next : acc;
      if (op == PLX_REDUCE_MIN) acc = next < acc ? next : acc;
    }
    if (op == PLX_REDUCE_MEAN) acc = acc / static_cast<Acc>(inputs.size());
    out[i] = static_cast<T>(acc);
  }
  return out;
}

/**
 * Expects `actual` to equal `expected` bit for bit; on failure names the first element
 * that differs and how many do.
 */
template <typename T>
void expect_bitwise_equal(std::span<const T> expected, std::span<const T> actual,
                          const std::string& what) {
  ASSERT_EQ(expected.size(), actual.size()) << what;
  if (std::memcmp(expected.data(), actual.data(), expected.size_bytes()) == 0) return;
  size_t first = expected.size();
  size_t differing = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::memcmp(&expected[i], &actual[i], sizeof(T)) != 0) {
      if (differing++ == 0) first = i;
    }
  }
  ADD_FAILURE() << what << ": " << differing << " of " << expected.size()
                << " elements differ; first at " << first << ": expected " << expected[first]
                << ", got " << actual[first];
}

/** Runs fn.template operator()<T>() with T = float or int32_t for `dtype`. */
template <typename Fn>
void with_dtype(plx_dtype dtype, Fn&& fn) {
  if (dtype == PLX_DTYPE_FLOAT32) {
    fn.template operator()<float>();
  } else {
    fn.template operator()<int32_t>();
  }
}

}  // namespace conformance

#endif  // PLEXUS_TESTS_PLUGINS_CONFORMANCE_REFERENCE_H
