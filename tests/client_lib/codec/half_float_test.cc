// FloatToHalf / HalfToFloat / FloatToBfloat16 / Bfloat16ToFloat /
// FloatToE5M2 / E5M2ToFloat: known bit patterns, ties to even, saturation,
// subnormals, and agreement with a slow nearest-value reference on many
// floats; RoundToValueType.

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "absl/base/casts.h"
#include "entrograd/codec.h"
#include "gtest/gtest.h"

namespace entrograd {
namespace {

struct Converted {
  uint16_t bits;
  bool saturated;
};

Converted ToHalf(float value) {
  bool saturated = false;
  const uint16_t bits = FloatToHalf(value, &saturated);
  return {bits, saturated};
}

Converted ToBf16(float value) {
  bool saturated = false;
  const uint16_t bits = FloatToBfloat16(value, &saturated);
  return {bits, saturated};
}

TEST(FloatToHalfTest, ExactValues) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xC000);
  EXPECT_EQ(FloatToHalf(0.5f), 0x3800);
  EXPECT_EQ(FloatToHalf(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
}

TEST(FloatToHalfTest, LargestFiniteDoesNotSaturate) {
  EXPECT_EQ(ToHalf(65504.0f).bits, 0x7BFF);
  EXPECT_FALSE(ToHalf(65504.0f).saturated);
  // 65519 is below the midpoint 65520 to the (inf) next step: rounds down.
  EXPECT_EQ(ToHalf(65519.0f).bits, 0x7BFF);
  EXPECT_FALSE(ToHalf(65519.0f).saturated);
}

TEST(FloatToHalfTest, OverflowSaturatesWithSign) {
  // 65520 is the tie between 65504 (odd mantissa) and 65536 (inf): RNE would
  // give inf, so it saturates.
  EXPECT_EQ(ToHalf(65520.0f).bits, 0x7BFF);
  EXPECT_TRUE(ToHalf(65520.0f).saturated);
  EXPECT_EQ(ToHalf(-65520.0f).bits, 0xFBFF);
  EXPECT_TRUE(ToHalf(-65520.0f).saturated);
  EXPECT_EQ(ToHalf(FLT_MAX).bits, 0x7BFF);
  EXPECT_EQ(ToHalf(-FLT_MAX).bits, 0xFBFF);
  EXPECT_TRUE(ToHalf(-FLT_MAX).saturated);
  EXPECT_EQ(ToHalf(1e6f).bits, 0x7BFF);
  EXPECT_EQ(FloatToHalf(1e6f), 0x7BFF);  // null `saturated` is allowed
}

TEST(FloatToHalfTest, Subnormals) {
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);  // smallest
  EXPECT_EQ(FloatToHalf(-std::ldexp(1.0f, -24)), 0x8001);
  EXPECT_EQ(FloatToHalf(1023 * std::ldexp(1.0f, -24)), 0x03FF);  // largest
  // 2^-25 is half the smallest subnormal: a tie, to even (0), sign kept.
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(FloatToHalf(-std::ldexp(1.0f, -25)), 0x8000);
  // Just above the tie rounds up.
  EXPECT_EQ(FloatToHalf(absl::bit_cast<float>(
                absl::bit_cast<uint32_t>(std::ldexp(1.0f, -25)) + 1)),
            0x0001);
  // 1.5 * 2^-24: tie between 1 (odd) and 2 (even) -> 2.
  EXPECT_EQ(FloatToHalf(1.5f * std::ldexp(1.0f, -24)), 0x0002);
  // 2.5 * 2^-24: tie between 2 (even) and 3 -> 2.
  EXPECT_EQ(FloatToHalf(2.5f * std::ldexp(1.0f, -24)), 0x0002);
  // 1023.5 * 2^-24: tie between 0x3FF (odd) and 0x400 (smallest normal).
  EXPECT_EQ(FloatToHalf(1023.5f * std::ldexp(1.0f, -24)), 0x0400);
  EXPECT_EQ(FloatToHalf(1e-30f), 0x0000);
  // The smallest float subnormal.
  EXPECT_EQ(FloatToHalf(absl::bit_cast<float>(0x00000001u)), 0x0000);
}

TEST(FloatToHalfTest, NormalTiesToEven) {
  const float ulp = std::ldexp(1.0f, -10);  // half ulp at 1.0
  // 1 + ulp/2: tie between 0x3C00 (even) and 0x3C01 -> 0x3C00.
  EXPECT_EQ(FloatToHalf(1.0f + ulp / 2), 0x3C00);
  // 1 + 3ulp/2: tie between 0x3C01 (odd) and 0x3C02 -> 0x3C02.
  EXPECT_EQ(FloatToHalf(1.0f + 3 * ulp / 2), 0x3C02);
  // Just above/below the tie.
  EXPECT_EQ(FloatToHalf(absl::bit_cast<float>(
                absl::bit_cast<uint32_t>(1.0f + ulp / 2) + 1)),
            0x3C01);
  EXPECT_EQ(FloatToHalf(absl::bit_cast<float>(
                absl::bit_cast<uint32_t>(1.0f + 3 * ulp / 2) - 1)),
            0x3C01);
  // 2049 lies between 2048 (0x6800) and 2050 (0x6801): tie -> 2048.
  EXPECT_EQ(FloatToHalf(2049.0f), 0x6800);
  EXPECT_EQ(FloatToHalf(2051.0f), 0x6802);  // tie 2050/2052 -> 2052
  // Mantissa carry into the exponent: 2047.9 -> 2048.
  EXPECT_EQ(FloatToHalf(2047.9f), 0x6800);
}

TEST(HalfToFloatTest, KnownValues) {
  EXPECT_EQ(HalfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(HalfToFloat(0xC000), -2.0f);
  EXPECT_EQ(HalfToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(HalfToFloat(0xFBFF), -65504.0f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfToFloat(0x03FF), 1023 * std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfToFloat(0x0400), std::ldexp(1.0f, -14));
  // -0 keeps its sign.
  EXPECT_EQ(absl::bit_cast<uint32_t>(HalfToFloat(0x8000)), 0x80000000u);
  EXPECT_EQ(absl::bit_cast<uint32_t>(HalfToFloat(0x0000)), 0x00000000u);
  EXPECT_TRUE(std::isinf(HalfToFloat(0x7C00)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7E00)));
}

TEST(HalfToFloatTest, EveryFiniteHalfRoundTripsExactly) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    if ((h & 0x7C00) == 0x7C00) continue;  // inf / NaN
    const float value = HalfToFloat(static_cast<uint16_t>(h));
    bool saturated = false;
    const uint16_t again = FloatToHalf(value, &saturated);
    EXPECT_EQ(again, h) << "half 0x" << std::hex << h;
    EXPECT_EQ(absl::bit_cast<uint32_t>(HalfToFloat(again)),
              absl::bit_cast<uint32_t>(value))
        << std::hex << h;
    EXPECT_FALSE(saturated) << std::hex << h;
  }
}

// A slow, independent reference: the nearest of the finite values of a
// 16-bit format whose positive patterns 0..max_finite are monotonic, ties to
// the even pattern; beyond max_finite, what RNE with an infinite next step
// would do (saturate when at or past the midpoint).
template <float (*kToFloat)(uint16_t)>
Converted Reference(float value, uint16_t max_finite) {
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  const double magnitude = std::fabs(static_cast<double>(value));
  const double max = kToFloat(max_finite);
  const double next_step =
      max + (max - static_cast<double>(kToFloat(max_finite - 1)));
  if (magnitude >= (max + next_step) / 2) {
    return {static_cast<uint16_t>(sign | max_finite), true};
  }
  if (magnitude >= max)
    return {static_cast<uint16_t>(sign | max_finite), false};
  // Largest pattern whose value is <= magnitude.
  uint32_t lo = 0, hi = max_finite;
  while (lo < hi) {
    const uint32_t mid = (lo + hi + 1) / 2;
    if (kToFloat(static_cast<uint16_t>(mid)) <= magnitude) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const double below = kToFloat(static_cast<uint16_t>(lo));
  const double above = kToFloat(static_cast<uint16_t>(lo + 1));
  uint32_t pick = lo;
  if (magnitude - below > above - magnitude ||
      (magnitude - below == above - magnitude && (lo & 1))) {
    pick = lo + 1;
  }
  return {static_cast<uint16_t>(sign | pick), false};
}

// Floats spread over every exponent, plus values just around the format's
// rounding points.
std::vector<float> SampleFloats() {
  std::mt19937 rng(12345);
  std::vector<float> samples;
  for (int i = 0; i < 300000; ++i) {
    uint32_t bits = rng();
    if ((bits & 0x7F800000u) == 0x7F800000u) continue;  // not finite
    samples.push_back(absl::bit_cast<float>(bits));
  }
  // Denser around the half range: exponents 2^-26 .. 2^17.
  std::uniform_int_distribution<uint32_t> near_half(0x32000000u, 0x48000000u);
  for (int i = 0; i < 300000; ++i) {
    const uint32_t bits = near_half(rng) | (rng() & 0x80000000u);
    samples.push_back(absl::bit_cast<float>(bits));
  }
  return samples;
}

TEST(FloatToHalfTest, MatchesNearestValueReference) {
  for (float value : SampleFloats()) {
    const Converted want = Reference<HalfToFloat>(value, 0x7BFF);
    const Converted got = ToHalf(value);
    ASSERT_EQ(got.bits, want.bits)
        << "float bits 0x" << std::hex << absl::bit_cast<uint32_t>(value);
    ASSERT_EQ(got.saturated, want.saturated)
        << std::hex << absl::bit_cast<uint32_t>(value);
  }
}

TEST(FloatToBfloat16Test, ExactValues) {
  EXPECT_EQ(FloatToBfloat16(1.0f), 0x3F80);
  EXPECT_EQ(FloatToBfloat16(-2.0f), 0xC000);
  EXPECT_EQ(FloatToBfloat16(0.0f), 0x0000);
  EXPECT_EQ(FloatToBfloat16(-0.0f), 0x8000);
  EXPECT_EQ(Bfloat16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(absl::bit_cast<uint32_t>(Bfloat16ToFloat(0x8000)), 0x80000000u);
}

TEST(FloatToBfloat16Test, TiesToEven) {
  // 0x3F808000 is halfway between 0x3F80 (even) and 0x3F81.
  EXPECT_EQ(FloatToBfloat16(absl::bit_cast<float>(0x3F808000u)), 0x3F80);
  EXPECT_EQ(FloatToBfloat16(absl::bit_cast<float>(0x3F808001u)), 0x3F81);
  EXPECT_EQ(FloatToBfloat16(absl::bit_cast<float>(0x3F807FFFu)), 0x3F80);
  // Halfway between 0x3F81 (odd) and 0x3F82 -> 0x3F82.
  EXPECT_EQ(FloatToBfloat16(absl::bit_cast<float>(0x3F818000u)), 0x3F82);
  // Float subnormals: same rule.
  EXPECT_EQ(FloatToBfloat16(absl::bit_cast<float>(0x00008000u)), 0x0000);
  EXPECT_EQ(FloatToBfloat16(absl::bit_cast<float>(0x00018000u)), 0x0002);
  // Carry into the exponent: 0x3FFF8000 (tie, odd) -> 0x4000 = 2.0.
  EXPECT_EQ(FloatToBfloat16(absl::bit_cast<float>(0x3FFF8000u)), 0x4000);
}

TEST(FloatToBfloat16Test, Saturation) {
  EXPECT_EQ(ToBf16(FLT_MAX).bits, 0x7F7F);
  EXPECT_TRUE(ToBf16(FLT_MAX).saturated);
  EXPECT_EQ(ToBf16(-FLT_MAX).bits, 0xFF7F);
  EXPECT_TRUE(ToBf16(-FLT_MAX).saturated);
  // The largest bf16 itself, and values that round down to it, are exact.
  EXPECT_EQ(ToBf16(absl::bit_cast<float>(0x7F7F0000u)).bits, 0x7F7F);
  EXPECT_FALSE(ToBf16(absl::bit_cast<float>(0x7F7F0000u)).saturated);
  EXPECT_EQ(ToBf16(absl::bit_cast<float>(0x7F7F7FFFu)).bits, 0x7F7F);
  EXPECT_FALSE(ToBf16(absl::bit_cast<float>(0x7F7F7FFFu)).saturated);
  // The tie above it would round to inf: saturates.
  EXPECT_EQ(ToBf16(absl::bit_cast<float>(0x7F7F8000u)).bits, 0x7F7F);
  EXPECT_TRUE(ToBf16(absl::bit_cast<float>(0x7F7F8000u)).saturated);
}

TEST(FloatToBfloat16Test, EveryFiniteBfloat16RoundTripsExactly) {
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    if ((b & 0x7F80) == 0x7F80) continue;
    const float value = Bfloat16ToFloat(static_cast<uint16_t>(b));
    bool saturated = false;
    EXPECT_EQ(FloatToBfloat16(value, &saturated), b) << std::hex << b;
    EXPECT_FALSE(saturated);
  }
}

TEST(FloatToBfloat16Test, MatchesNearestValueReference) {
  for (float value : SampleFloats()) {
    const Converted want = Reference<Bfloat16ToFloat>(value, 0x7F7F);
    const Converted got = ToBf16(value);
    ASSERT_EQ(got.bits, want.bits)
        << "float bits 0x" << std::hex << absl::bit_cast<uint32_t>(value);
    ASSERT_EQ(got.saturated, want.saturated)
        << std::hex << absl::bit_cast<uint32_t>(value);
  }
}

Converted ToE5M2(float value) {
  bool saturated = false;
  const uint8_t bits = FloatToE5M2(value, &saturated);
  return {bits, saturated};
}

// E5M2 patterns as the 16-bit reference walks them (sign bit 0x8000 there).
float E5M2PatternToFloat(uint16_t pattern) {
  return E5M2ToFloat(static_cast<uint8_t>(pattern));
}

TEST(FloatToE5M2Test, ExactValuesAreBinary16sTopByte) {
  EXPECT_EQ(FloatToE5M2(1.0f), 0x3C);
  EXPECT_EQ(FloatToE5M2(-2.0f), 0xC0);
  EXPECT_EQ(FloatToE5M2(1.5f), 0x3E);
  EXPECT_EQ(FloatToE5M2(0.0f), 0x00);
  EXPECT_EQ(FloatToE5M2(-0.0f), 0x80);
  EXPECT_EQ(FloatToE5M2(std::ldexp(1.0f, -14)), 0x04);  // smallest normal
  EXPECT_EQ(FloatToE5M2(std::ldexp(1.0f, -16)), 0x01);  // smallest subnormal
  EXPECT_EQ(E5M2ToFloat(0x3C), 1.0f);
  EXPECT_EQ(E5M2ToFloat(0x7B), 57344.0f);
  EXPECT_EQ(E5M2ToFloat(0x03), 3 * std::ldexp(1.0f, -16));
  EXPECT_EQ(absl::bit_cast<uint32_t>(E5M2ToFloat(0x80)), 0x80000000u);
}

TEST(FloatToE5M2Test, TiesToEvenIncludingSubnormals) {
  // 1.125 is halfway between 1.0 (0x3C, even) and 1.25 (0x3D).
  EXPECT_EQ(FloatToE5M2(1.125f), 0x3C);
  EXPECT_EQ(FloatToE5M2(std::nextafter(1.125f, 2.0f)), 0x3D);
  // 1.375 is halfway between 1.25 (odd) and 1.5 (0x3E).
  EXPECT_EQ(FloatToE5M2(1.375f), 0x3E);
  // Carry into the exponent: 1.875 (tie, odd 1.75) -> 2.0.
  EXPECT_EQ(FloatToE5M2(1.875f), 0x40);
  // Half the smallest subnormal is a tie to 0; just above it, 2^-16.
  EXPECT_EQ(FloatToE5M2(std::ldexp(1.0f, -17)), 0x00);
  EXPECT_EQ(FloatToE5M2(std::nextafter(std::ldexp(1.0f, -17), 1.0f)), 0x01);
  // 1.5 * 2^-16 is a tie between 0x01 (odd) and 0x02.
  EXPECT_EQ(FloatToE5M2(1.5f * std::ldexp(1.0f, -16)), 0x02);
  // 3.5 * 2^-16 rounds up to 4 * 2^-16, the smallest normal.
  EXPECT_EQ(FloatToE5M2(3.5f * std::ldexp(1.0f, -16)), 0x04);
}

TEST(FloatToE5M2Test, Saturation) {
  EXPECT_EQ(ToE5M2(57344.0f).bits, 0x7B);
  EXPECT_FALSE(ToE5M2(57344.0f).saturated);
  EXPECT_EQ(ToE5M2(61439.0f).bits, 0x7B);  // below the midpoint to inf
  EXPECT_FALSE(ToE5M2(61439.0f).saturated);
  EXPECT_EQ(ToE5M2(61440.0f).bits, 0x7B);  // the tie that RNE sends to inf
  EXPECT_TRUE(ToE5M2(61440.0f).saturated);
  EXPECT_EQ(ToE5M2(-FLT_MAX).bits, 0xFB);
  EXPECT_TRUE(ToE5M2(-FLT_MAX).saturated);
}

TEST(FloatToE5M2Test, EveryFiniteE5M2RoundTripsExactly) {
  for (uint32_t b = 0; b <= 0xFF; ++b) {
    if ((b & 0x7C) == 0x7C) continue;  // inf / NaN
    const float value = E5M2ToFloat(static_cast<uint8_t>(b));
    EXPECT_EQ(value, HalfToFloat(static_cast<uint16_t>(b << 8))) << b;
    bool saturated = false;
    EXPECT_EQ(FloatToE5M2(value, &saturated), b) << std::hex << b;
    EXPECT_FALSE(saturated);
  }
}

TEST(FloatToE5M2Test, MatchesNearestValueReference) {
  for (float value : SampleFloats()) {
    const Converted want = Reference<E5M2PatternToFloat>(value, 0x7B);
    const auto want_bits = static_cast<uint16_t>(
        ((want.bits & 0x8000) != 0 ? 0x80 : 0) | (want.bits & 0x7F));
    const Converted got = ToE5M2(value);
    ASSERT_EQ(got.bits, want_bits)
        << "float bits 0x" << std::hex << absl::bit_cast<uint32_t>(value);
    ASSERT_EQ(got.saturated, want.saturated)
        << std::hex << absl::bit_cast<uint32_t>(value);
  }
}

TEST(RoundToValueTypeTest, IsWhatTheReceiverDecodes) {
  const float value = 0.1f;
  EXPECT_EQ(absl::bit_cast<uint32_t>(RoundToValueType(ValueType::kF32, value)),
            absl::bit_cast<uint32_t>(value));
  EXPECT_EQ(RoundToValueType(ValueType::kF16, value),
            HalfToFloat(FloatToHalf(value)));
  EXPECT_EQ(RoundToValueType(ValueType::kBF16, value),
            Bfloat16ToFloat(FloatToBfloat16(value)));
  EXPECT_EQ(RoundToValueType(ValueType::kE5M2, value), 0.09375f);  // 1.5 * 2^-4
  // Each lossy type changes 0.1 (none holds it exactly), and the error is
  // exact in float32: rounded + (value - rounded) == value.
  for (ValueType type : {ValueType::kF16, ValueType::kBF16, ValueType::kE5M2}) {
    const float rounded = RoundToValueType(type, value);
    EXPECT_NE(rounded, value) << ValueTypeName(type);
    EXPECT_EQ(rounded + (value - rounded), value) << ValueTypeName(type);
  }
}

}  // namespace
}  // namespace entrograd
