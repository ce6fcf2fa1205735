// Host-side float16 and bfloat16 conversions for the CUDA tests. The CPU
// reference compressor takes float, so a half or bfloat16 gradient reaches it
// widened exactly, as the device compressor must widen it. Written out here,
// independent of cuda_fp16.h, so the reference shares no code with the device
// path.
#ifndef ENTROGRAD_TESTS_CLIENT_LIB_CUDA_HALF_BITS_H_
#define ENTROGRAD_TESTS_CLIENT_LIB_CUDA_HALF_BITS_H_

#include <cmath>
#include <cstdint>

#include "absl/base/casts.h"

namespace entrograd::cuda_test {

// IEEE binary16 bits -> float, exactly (subnormals, +-0, Inf and NaN too).
inline float HalfBitsToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1Fu;
  const uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return absl::bit_cast<float>(absl::bit_cast<uint32_t>(magnitude) | sign);
  }
  if (exponent == 0x1F) {  // Inf or NaN, payload kept
    return absl::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  }
  return absl::bit_cast<float>(sign | ((exponent - 15 + 127) << 23) |
                               (mantissa << 13));
}

// float -> binary16 bits, rounding to nearest even; overflow gives Inf, NaN
// stays a (quiet) NaN.
inline uint16_t FloatToHalfBits(float value) {
  const uint32_t x = absl::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t magnitude = x & 0x7FFFFFFFu;
  if (magnitude >= 0x7F800000u) {
    return sign | (magnitude > 0x7F800000u ? 0x7E00u : 0x7C00u);
  }
  if (magnitude < 0x38800000u) {  // below 2^-14: a half subnormal or zero
    // |value| * 2^24 is exact; nearbyint rounds half to even. A result of
    // 1024 is the smallest normal's bit pattern, which is right.
    const float scaled = std::ldexp(std::fabs(value), 24);
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  const uint32_t exponent = (magnitude >> 23) - 127 + 15;
  if (exponent >= 0x1F) return sign | 0x7C00u;
  const uint32_t mantissa = magnitude & 0x7FFFFFu;
  uint32_t half = (exponent << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1FFFu;
  // A carry out of the mantissa moves into the exponent, up to Inf: right.
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return sign | static_cast<uint16_t>(half);
}

// bfloat16 bits -> float: the top half of a float's bits, so always exact.
inline float BFloat16BitsToFloat(uint16_t bits) {
  return absl::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

// float -> bfloat16 bits, rounding to nearest even; NaN stays NaN.
inline uint16_t FloatToBFloat16Bits(float value) {
  const uint32_t x = absl::bit_cast<uint32_t>(value);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) {
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  }
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace entrograd::cuda_test

#endif  // ENTROGRAD_TESTS_CLIENT_LIB_CUDA_HALF_BITS_H_
