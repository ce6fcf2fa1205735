// Scalar float32 <-> binary16 / bfloat16 conversions, done on the bit
// patterns so the result is the same on every host and compiler (no
// dependence on the FPU's rounding mode or on _Float16 support). Inline so
// the per-element loops of value_encoding.cc can inline them; the public
// FloatToHalf & co. in half_float.cc wrap these.
#ifndef ENTROGRAD_CODEC_HALF_FLOAT_H_
#define ENTROGRAD_CODEC_HALF_FLOAT_H_

#include <cstdint>

#include "absl/base/casts.h"

namespace entrograd::codec_internal {

inline constexpr uint32_t kF32AbsMask = 0x7FFFFFFFu;
inline constexpr uint32_t kF32ExpMask = 0x7F800000u;  // also the bits of +inf

// Half: largest finite 65504, and the smallest float that rounds to inf
// under round-to-nearest-even: 65520 = 65504 + half an ulp (32 / 2), a tie
// that goes to the even neighbour 65536, i.e. inf.
inline constexpr uint16_t kHalfMaxFinite = 0x7BFF;
inline constexpr uint16_t kHalfQuietNan = 0x7E00;
inline constexpr uint32_t kF32HalfOverflow = 0x477FF000u;  // 65520.0f
// Floats below 2^-14 (0x38800000) become half subnormals; at or below
// 2^-25 (0x33000000, half the smallest subnormal, a tie to even 0) zero.
inline constexpr uint32_t kF32HalfMinNormal = 0x38800000u;
inline constexpr uint32_t kF32HalfUnderflow = 0x33000000u;

inline constexpr uint16_t kBf16MaxFinite = 0x7F7F;
inline constexpr uint16_t kBf16QuietNan = 0x7FC0;

inline void MarkSaturated(bool* saturated) {
  if (saturated != nullptr) *saturated = true;
}

// Rounds `value >> shift` to nearest, ties to even. shift in [1, 31] and
// value < 2^31 (so the sum cannot overflow). Branch-free on purpose: the
// dropped bits of real gradients are random, so a branch would mispredict
// half the time. Adding half - 1 carries when the remainder exceeds half;
// adding the kept LSB as well makes an exact tie carry only when odd.
inline uint32_t ShiftRightRoundEven(uint32_t value, int shift) {
  const uint32_t half = 1u << (shift - 1);
  const uint32_t kept_lsb = (value >> shift) & 1u;
  return (value + (half - 1) + kept_lsb) >> shift;
}

// Rounds a float to a format with binary16's exponent range (bias 15,
// subnormals down to 2^-(14 + kMantissaBits)) that keeps kMantissaBits of
// the mantissa: binary16 itself (10) or FP8 E5M2 (2), returned as the
// format's bits in `Bits` (sign in its top bit). Never called with NaN on
// the encode path (the encoder rejects it first); it maps to `kQuietNan`,
// and +-inf saturates. `kOverflow` is the smallest float that rounds to inf
// under round-to-nearest-even, `kUnderflow` the largest that rounds to 0.
template <typename Bits, int kMantissaBits, uint32_t kOverflow,
          uint32_t kUnderflow, Bits kMaxFinite, Bits kQuietNan>
inline Bits FloatToBinary16RangeBits(float value, bool* saturated) {
  constexpr int kWidth = 8 * static_cast<int>(sizeof(Bits));
  constexpr int kDroppedBits = 23 - kMantissaBits;
  const uint32_t bits = absl::bit_cast<uint32_t>(value);
  const auto sign =
      static_cast<Bits>((bits >> (32 - kWidth)) & (1u << (kWidth - 1)));
  const uint32_t abs = bits & kF32AbsMask;
  if (abs > kF32ExpMask) return sign | kQuietNan;  // NaN: not for the wire
  if (abs >= kOverflow) {                          // includes inf
    MarkSaturated(saturated);
    return sign | kMaxFinite;
  }
  if (abs >= kF32HalfMinNormal) {
    // Rebias the exponent (127 -> 15) and round the 23-bit mantissa to
    // kMantissaBits; a carry out of the mantissa correctly bumps the
    // exponent, and cannot reach inf because abs < kOverflow.
    const uint32_t rebased = abs - ((127u - 15u) << 23);
    return sign | static_cast<Bits>(ShiftRightRoundEven(rebased, kDroppedBits));
  }
  if (abs <= kUnderflow) return sign;  // +-0, sign kept
  // Subnormal: the result is round(value / 2^-(14 + kMantissaBits)). With
  // biased float exponent e and implicit-1 mantissa m, value = m * 2^(e-150),
  // so that is m >> (136 - kMantissaBits - e). Rounding up to the first
  // normal pattern yields the smallest normal, which is the right encoding.
  const uint32_t exponent = abs >> 23;
  const uint32_t mantissa = (abs & 0x7FFFFFu) | 0x800000u;
  return sign | static_cast<Bits>(ShiftRightRoundEven(
                    mantissa, static_cast<int>(136u - kMantissaBits - exponent)));
}

// FloatToHalf of codec.h.
inline uint16_t FloatToHalfBits(float value, bool* saturated) {
  return FloatToBinary16RangeBits<uint16_t, 10, kF32HalfOverflow,
                                  kF32HalfUnderflow, kHalfMaxFinite,
                                  kHalfQuietNan>(value, saturated);
}

// HalfToFloat of codec.h: exact for every pattern, inf and NaN included.
inline float HalfBitsToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1Fu;
  const uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0x1F) {  // inf / NaN
    return absl::bit_cast<float>(sign | kF32ExpMask | (mantissa << 13));
  }
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    const float magnitude = static_cast<float>(mantissa) * (1.0f / 16777216.0f);
    return absl::bit_cast<float>(sign | absl::bit_cast<uint32_t>(magnitude));
  }
  return absl::bit_cast<float>(sign | ((exponent + 127u - 15u) << 23) |
                               (mantissa << 13));
}

// FloatToBfloat16 of codec.h; NaN and inf as FloatToHalfBits.
inline uint16_t FloatToBfloat16Bits(float value, bool* saturated) {
  const uint32_t bits = absl::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & kF32AbsMask;
  if (abs > kF32ExpMask) return sign | kBf16QuietNan;
  // bfloat16 is the top half of a float: round the low 16 bits away, ties to
  // even. Anything that would round up to the inf pattern saturates.
  const uint32_t rounded = ShiftRightRoundEven(abs, 16);
  if (rounded >= (kF32ExpMask >> 16)) {
    MarkSaturated(saturated);
    return sign | kBf16MaxFinite;
  }
  return sign | static_cast<uint16_t>(rounded);
}

// Bfloat16ToFloat of codec.h: the top half of a float, exact.
inline float Bfloat16BitsToFloat(uint16_t bits) {
  return absl::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

// FP8 E5M2 is binary16 with its low 8 mantissa bits dropped: the same
// exponent range, 2 mantissa bits. Largest finite 0x7B = 57344; the
// smallest float that rounds to inf, 61440 = 57344 + half an ulp (8192 / 2),
// is a tie to the even neighbour 65536, i.e. inf. Subnormals are multiples
// of 2^-16; at or below 2^-17 (a tie to even 0) a value becomes zero.
inline constexpr uint8_t kE5M2MaxFinite = 0x7B;
inline constexpr uint8_t kE5M2QuietNan = 0x7E;
inline constexpr uint32_t kF32E5M2Overflow = 0x47700000u;   // 61440.0f
inline constexpr uint32_t kF32E5M2Underflow = 0x37000000u;  // 2^-17

// FloatToE5M2 of codec.h, rounded once from the float (rounding through
// binary16 first would round twice and can differ at ties).
inline uint8_t FloatToE5M2Bits(float value, bool* saturated) {
  return FloatToBinary16RangeBits<uint8_t, 2, kF32E5M2Overflow,
                                  kF32E5M2Underflow, kE5M2MaxFinite,
                                  kE5M2QuietNan>(value, saturated);
}

// E5M2ToFloat of codec.h: the top byte of a binary16, exact.
inline float E5M2BitsToFloat(uint8_t bits) {
  return HalfBitsToFloat(static_cast<uint16_t>(bits << 8));
}

}  // namespace entrograd::codec_internal

#endif  // ENTROGRAD_CODEC_HALF_FLOAT_H_
