// IEEE 754 binary16 ("half", PLX_DTYPE_FLOAT16) storage and its exact conversions to and
// from float32, bit for bit those of x86's F16C (vcvtps2ph with round-to-nearest-even,
// vcvtph2ps): float -> half rounds to nearest, ties to even, overflows to +-inf from 65520
// up, keeps subnormals, and turns a NaN into a quiet NaN with the top bits of its payload;
// half -> float is exact and quiets a signalling NaN likewise. numpy's astype agrees on
// every value but signalling NaNs. Portable integer code, so that no build needs -mf16c.
#pragma once

#include <bit>
#include <cstdint>

namespace plexus::ir {

/// One float16 element as stored (its bits). Kernels compute with float32 values.
struct Float16 {
  uint16_t bits = 0;
  friend bool operator==(Float16, Float16) = default;
};

/// The float32 value of a float16 (exact: every half is a float).
inline float half_to_float(Float16 h) {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  const uint32_t magnitude = h.bits & 0x7fffu;
  if (magnitude > 0x7c00u) return std::bit_cast<float>(sign | 0x7fc00000u | ((magnitude & 0x3ffu) << 13));  // NaN
  if (magnitude == 0x7c00u) return std::bit_cast<float>(sign | 0x7f800000u);
  if (magnitude >= 0x0400u) return std::bit_cast<float>(sign | ((magnitude << 13) + (112u << 23)));
  // Zero or subnormal: magnitude * 2^-24, exact in float32.
  return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(static_cast<float>(magnitude) * 0x1p-24f));
}

/// The float16 nearest to `f` (ties to even), as described above.
inline Float16 float_to_half(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return {static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu))};
  if (magnitude >= (143u << 23)) return {static_cast<uint16_t>(sign | 0x7c00u)};  // >= 2^16 or inf
  if (magnitude < (113u << 23)) {
    // Below 2^-14, the half's subnormal range: adding 0.5 (exponent 126) aligns the value's
    // bits at 2^-24 units at the bottom of the mantissa, rounded to nearest even by the FPU.
    const float aligned = std::bit_cast<float>(magnitude) + 0.5f;
    return {static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(aligned) - (126u << 23)))};
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even;
  // a carry out of the mantissa moves to the next exponent (65520 and up become inf).
  const uint32_t odd = (magnitude >> 13) & 1u;
  const uint32_t rounded = magnitude - (112u << 23) + 0xfffu + odd;
  return {static_cast<uint16_t>(sign | (rounded >> 13))};
}

}  // namespace plexus::ir
