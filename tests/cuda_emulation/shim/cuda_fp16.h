// The emulator's cuda_fp16.h: __half and the conversions the kernels and
// tests use, written here so that the emulation needs no CUDA toolkit.
// Every result is bitwise CUDA's (its host implementation, which matches
// cvt.f32.f16 and cvt.rn.f16.f32 on the GPU): round to nearest even, a
// NaN becomes CUDA's canonical NaN (sign dropped) either way.
// fp16_conformance_test.cc checks all 65536 halves and a sweep of
// floats against the toolkit where one is installed.
#ifndef ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_CUDA_FP16_H_
#define ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_CUDA_FP16_H_

#include <cstdint>
#include <cstring>

namespace entrograd::cuda_emulation {

// IEEE binary16 as its bits: two bytes, trivially copyable, like CUDA's.
// A type of the emulator's own namespace behind the name __half, so that
// it can never be confused with the toolkit's at link time (the
// conformance test links both).
struct Half {
  uint16_t bits;
};
static_assert(sizeof(Half) == 2);

inline uint16_t FloatToHalfBits(float value) {
  uint32_t x;
  std::memcpy(&x, &value, sizeof(x));
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t magnitude = x & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return 0x7FFFu;         // NaN
  if (magnitude >= 0x47800000u) return sign | 0x7C00u;  // >= 2^16: Inf
  if (magnitude >= 0x38800000u) {  // a normal half, or 65520.. rounding to Inf
    uint32_t half = (magnitude - 0x38000000u) >> 13;  // rebias 127 -> 15
    const uint32_t rest = magnitude & 0x1FFFu;
    // A carry out of the mantissa moves into the exponent: right.
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u) != 0)) ++half;
    return sign | static_cast<uint16_t>(half);
  }
  if (magnitude <= 0x33000000u) return sign;  // <= 2^-25: rounds to zero
  // A subnormal half: |value| * 2^24 rounded to an integer (1024, the
  // smallest normal's bits, when it rounds up that far).
  const uint32_t exponent = magnitude >> 23;  // 102..112
  const uint32_t mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126u - exponent;  // 14..24
  uint32_t half = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (rest > halfway || (rest == halfway && (half & 1u) != 0)) ++half;
  return sign | static_cast<uint16_t>(half);
}

inline float HalfBitsToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1Fu;
  uint32_t mantissa = bits & 0x3FFu;
  uint32_t x;
  if (exponent == 0x1F) {
    x = mantissa != 0 ? 0x7FFFFFFFu : sign | 0x7F800000u;
  } else if (exponent == 0) {
    if (mantissa == 0) {
      x = sign;
    } else {  // subnormal: normalise, mantissa * 2^-24 is a normal float
      exponent = 127 - 14;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      x = sign | (exponent << 23) | ((mantissa & 0x3FFu) << 13);
    }
  } else {
    x = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float value;
  std::memcpy(&value, &x, sizeof(value));
  return value;
}

}  // namespace entrograd::cuda_emulation

using __half = ::entrograd::cuda_emulation::Half;

inline float __half2float(__half a) {
  return ::entrograd::cuda_emulation::HalfBitsToFloat(a.bits);
}
inline __half __float2half_rn(float a) {
  return __half{::entrograd::cuda_emulation::FloatToHalfBits(a)};
}
inline __half __float2half(float a) { return __float2half_rn(a); }

#endif  // ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_CUDA_FP16_H_
