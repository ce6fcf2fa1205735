// The CUDA toolkit's own host conversions between float and half or
// bfloat16, as bits, for fp16_conformance_test.cc to hold the emulator's
// (shim/cuda_fp16.h, shim/cuda_bf16.h) against. Plain types only: the test
// sees the shim's __half, toolkit_fp16_reference.cc the toolkit's, and the
// two never meet in one file. Built only where a toolkit is installed.
#ifndef ENTROGRAD_TESTS_CUDA_EMULATION_TOOLKIT_FP16_REFERENCE_H_
#define ENTROGRAD_TESTS_CUDA_EMULATION_TOOLKIT_FP16_REFERENCE_H_

#include <cstdint>

namespace entrograd::cuda_emulation::toolkit {

// __half2float and __float2half_rn.
float HalfBitsToFloat(uint16_t bits);
uint16_t FloatToHalfBits(float value);
// __bfloat162float and __float2bfloat16_rn.
float BFloat16BitsToFloat(uint16_t bits);
uint16_t FloatToBFloat16Bits(float value);

}  // namespace entrograd::cuda_emulation::toolkit

#endif  // ENTROGRAD_TESTS_CUDA_EMULATION_TOOLKIT_FP16_REFERENCE_H_
