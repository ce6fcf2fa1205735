// The emulator's cuda_bf16.h: __nv_bfloat16 and the conversions the kernels
// and tests use, bitwise CUDA's (see cuda_fp16.h): widening is exact, NaN
// payload kept; narrowing rounds to nearest even, and any NaN becomes
// 0x7FFF.
#ifndef ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_CUDA_BF16_H_
#define ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_CUDA_BF16_H_

#include <cstdint>
#include <cstring>

// CUDA's cuda_bf16.h includes cuda_fp16.h: code may rely on that.
#include "cuda_fp16.h"

namespace entrograd::cuda_emulation {

// bfloat16 as its bits (the top half of a float's); see Half.
struct BFloat16 {
  uint16_t bits;
};
static_assert(sizeof(BFloat16) == 2);

inline uint16_t FloatToBFloat16Bits(float value) {
  uint32_t x;
  std::memcpy(&x, &value, sizeof(x));
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FFFu;  // NaN
  const uint32_t rest = x & 0xFFFFu;
  uint32_t bits = x >> 16;
  // A carry moves into the exponent, up to Inf: right.
  if (rest > 0x8000u || (rest == 0x8000u && (bits & 1u) != 0)) ++bits;
  return static_cast<uint16_t>(bits);
}

inline float BFloat16BitsToFloat(uint16_t bits) {
  const uint32_t x = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &x, sizeof(value));
  return value;
}

}  // namespace entrograd::cuda_emulation

using __nv_bfloat16 = ::entrograd::cuda_emulation::BFloat16;

inline float __bfloat162float(__nv_bfloat16 a) {
  return ::entrograd::cuda_emulation::BFloat16BitsToFloat(a.bits);
}
inline __nv_bfloat16 __float2bfloat16_rn(float a) {
  return __nv_bfloat16{::entrograd::cuda_emulation::FloatToBFloat16Bits(a)};
}
inline __nv_bfloat16 __float2bfloat16(float a) {
  return __float2bfloat16_rn(a);
}

#endif  // ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_CUDA_BF16_H_
