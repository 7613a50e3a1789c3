// float16 conversions (core/ir/float16.h): exact widening, round-to-nearest-even narrowing
// with overflow to inf, subnormals and quiet NaNs, checked on chosen values bit for bit, on
// every half, and against the CPU's own F16C instructions where the CPU has them.
#include "core/ir/float16.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace plexus::ir {
namespace {

uint16_t bits_of(float f) { return float_to_half(f).bits; }

TEST(Float16, NarrowingRoundsToNearestEvenBitForBit) {
  EXPECT_EQ(bits_of(1.0f), 0x3c00);
  EXPECT_EQ(bits_of(-2.5f), 0xc100);
  EXPECT_EQ(bits_of(1.0f + 0x1p-11f), 0x3c00);         // a tie: down to the even 1.0
  EXPECT_EQ(bits_of(1.0f + 3 * 0x1p-11f), 0x3c02);     // a tie: up to the even 1 + 2^-9
  EXPECT_EQ(bits_of(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);  // just above the tie
  EXPECT_EQ(bits_of(0.1f), 0x2e66);
  EXPECT_EQ(bits_of(-0.0f), 0x8000);
}

TEST(Float16, LargeValuesOverflowToInfinity) {
  EXPECT_EQ(bits_of(65504.0f), 0x7bff);  // the largest half
  EXPECT_EQ(bits_of(65519.99f), 0x7bff);
  EXPECT_EQ(bits_of(65520.0f), 0x7c00);  // the tie above 65504 rounds to inf
  EXPECT_EQ(bits_of(1e10f), 0x7c00);
  EXPECT_EQ(bits_of(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(bits_of(std::numeric_limits<float>::max()), 0x7c00);
}

TEST(Float16, SmallValuesBecomeSubnormalsOrZero) {
  EXPECT_EQ(bits_of(0x1p-24f), 0x0001);            // the smallest subnormal
  EXPECT_EQ(bits_of(0x1p-25f), 0x0000);            // a tie: down to the even 0
  EXPECT_EQ(bits_of(0x1p-25f * 1.0001f), 0x0001);  // just above the tie
  EXPECT_EQ(bits_of(3 * 0x1p-25f), 0x0002);        // a tie: up to the even 2 * 2^-24
  EXPECT_EQ(bits_of(1023 * 0x1p-24f), 0x03ff);     // the largest subnormal
  EXPECT_EQ(bits_of(1023.5f * 0x1p-24f), 0x0400);  // a tie: up to the smallest normal
  EXPECT_EQ(bits_of(0x1p-14f), 0x0400);
  EXPECT_EQ(bits_of(-1e-30f), 0x8000);
  EXPECT_EQ(bits_of(std::numeric_limits<float>::denorm_min()), 0x0000);
}

TEST(Float16, NanStaysAQuietNanWithItsSignAndTopPayload) {
  EXPECT_EQ(bits_of(std::numeric_limits<float>::quiet_NaN()), 0x7e00);
  EXPECT_EQ(bits_of(-std::numeric_limits<float>::quiet_NaN()), 0xfe00);
  EXPECT_EQ(bits_of(std::bit_cast<float>(0x7f802000u)), 0x7e01);  // signalling, payload kept, quieted
  EXPECT_TRUE(std::isnan(half_to_float(Float16{0x7c01})));
  EXPECT_EQ(std::bit_cast<uint32_t>(half_to_float(Float16{0x7e00})), 0x7fc00000u);
}

TEST(Float16, WideningIsExact) {
  EXPECT_EQ(half_to_float(Float16{0x0001}), 0x1p-24f);
  EXPECT_EQ(half_to_float(Float16{0x03ff}), 1023 * 0x1p-24f);
  EXPECT_EQ(half_to_float(Float16{0x7bff}), 65504.0f);
  EXPECT_EQ(half_to_float(Float16{0x3555}), 0.333251953125f);
  EXPECT_EQ(half_to_float(Float16{0x7c00}), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::signbit(half_to_float(Float16{0x8000})));
}

TEST(Float16, EveryHalfRoundTrips) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const Float16 h{static_cast<uint16_t>(b)};
    const bool nan = (b & 0x7c00) == 0x7c00 && (b & 0x3ff) != 0;
    EXPECT_EQ(float_to_half(half_to_float(h)).bits, nan ? (b | 0x200) : b) << std::hex << b;
  }
}

#if defined(__x86_64__)
__attribute__((target("f16c"))) uint16_t f16c_narrow(float f) {
  return static_cast<uint16_t>(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0));
}

__attribute__((target("f16c"))) float f16c_widen(uint16_t h) {
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}

// CPUID leaf 1, ECX bit 29 (clang's __builtin_cpu_supports does not know "f16c").
bool cpu_has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
}

TEST(Float16, AgreesWithTheCpusF16cInstructions) {
  if (!cpu_has_f16c()) GTEST_SKIP() << "this CPU has no F16C";
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const auto h = static_cast<uint16_t>(b);
    EXPECT_EQ(std::bit_cast<uint32_t>(half_to_float(Float16{h})), std::bit_cast<uint32_t>(f16c_widen(h))) << b;
  }
  std::mt19937 gen(42);
  for (int i = 0; i < 2'000'000; ++i) {
    // Random bit patterns, and values near the half range where the rounding cases are.
    const uint32_t raw = gen();
    const float f =
        i % 2 ? std::bit_cast<float>(raw) : std::ldexp(static_cast<float>(raw) / 4294967296.0f, (i % 60) - 30);
    ASSERT_EQ(bits_of(f), f16c_narrow(f)) << std::hexfloat << f;
  }
}
#endif

}  // namespace
}  // namespace plexus::ir
