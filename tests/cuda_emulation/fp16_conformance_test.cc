// The emulator's half and bfloat16 conversions (shim/cuda_fp16.h,
// shim/cuda_bf16.h) give the CUDA toolkit's results bit for bit: widening
// over every one of the 65536 bit patterns, narrowing over a sweep of
// floats that hits every rounding decision. Built where a toolkit is
// installed; the emulation itself never needs one.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "cuda_emulation/toolkit_fp16_reference.h"
#include "gtest/gtest.h"

namespace entrograd::cuda_emulation {
namespace {

uint32_t BitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float FloatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// Float bit patterns on both sides of every rounding boundary, for every
// sign and exponent: each mantissa with at most three bits set, and each
// with at most three bits clear. A tie at any bit position is one set bit
// over zeros; just above it, two set bits; just below, a clear bit over
// ones. That covers the half subnormals too, whose rounding bit moves
// with the exponent. Then a stride over the whole space, for the rest.
std::vector<uint32_t> RoundingSweep() {
  std::vector<uint32_t> mantissas;
  for (int a = -1; a < 23; ++a) {
    for (int b = a; b < 23; ++b) {
      for (int c = b; c < 23; ++c) {
        uint32_t m = 0;
        for (int bit : {a, b, c}) {
          if (bit >= 0) m |= 1u << bit;
        }
        mantissas.push_back(m);
        mantissas.push_back(~m & 0x7FFFFFu);
      }
    }
  }
  std::vector<uint32_t> sweep;
  for (uint32_t sign_and_exponent = 0; sign_and_exponent < 512;
       ++sign_and_exponent) {
    for (uint32_t m : mantissas) sweep.push_back(sign_and_exponent << 23 | m);
  }
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFu; bits += 4093) {
    sweep.push_back(static_cast<uint32_t>(bits));
  }
  return sweep;
}

TEST(Fp16ConformanceTest, HalfToFloatMatchesTheToolkitForEveryHalf) {
  for (uint32_t bits = 0; bits <= 0xFFFFu; ++bits) {
    __half half;
    const uint16_t half_bits = static_cast<uint16_t>(bits);
    std::memcpy(&half, &half_bits, sizeof(half));
    ASSERT_EQ(BitsOf(__half2float(half)),
              BitsOf(toolkit::HalfBitsToFloat(half_bits)))
        << "half 0x" << std::hex << bits;
  }
}

TEST(Fp16ConformanceTest, BFloat16ToFloatMatchesTheToolkitForEveryBFloat16) {
  for (uint32_t bits = 0; bits <= 0xFFFFu; ++bits) {
    __nv_bfloat16 value;
    const uint16_t value_bits = static_cast<uint16_t>(bits);
    std::memcpy(&value, &value_bits, sizeof(value));
    ASSERT_EQ(BitsOf(__bfloat162float(value)),
              BitsOf(toolkit::BFloat16BitsToFloat(value_bits)))
        << "bfloat16 0x" << std::hex << bits;
  }
}

TEST(Fp16ConformanceTest, FloatToHalfRoundsAsTheToolkit) {
  for (uint32_t bits : RoundingSweep()) {
    const float value = FloatFromBits(bits);
    uint16_t emulated;
    const __half half = __float2half_rn(value);
    std::memcpy(&emulated, &half, sizeof(emulated));
    ASSERT_EQ(emulated, toolkit::FloatToHalfBits(value))
        << "float 0x" << std::hex << bits;
    const __half same = __float2half(value);
    ASSERT_EQ(std::memcmp(&same, &half, sizeof(half)), 0);
  }
}

TEST(Fp16ConformanceTest, FloatToBFloat16RoundsAsTheToolkit) {
  for (uint32_t bits : RoundingSweep()) {
    const float value = FloatFromBits(bits);
    uint16_t emulated;
    const __nv_bfloat16 narrow = __float2bfloat16_rn(value);
    std::memcpy(&emulated, &narrow, sizeof(emulated));
    ASSERT_EQ(emulated, toolkit::FloatToBFloat16Bits(value))
        << "float 0x" << std::hex << bits;
    const __nv_bfloat16 same = __float2bfloat16(value);
    ASSERT_EQ(std::memcmp(&same, &narrow, sizeof(narrow)), 0);
  }
}

}  // namespace
}  // namespace entrograd::cuda_emulation
