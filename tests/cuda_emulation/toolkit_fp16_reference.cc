// Compiled against the CUDA toolkit's headers, never the emulator's shim
// (tests/cuda_emulation/CMakeLists.txt). The toolkit's conversions are
// static functions, so they cannot collide with the shim's at link time.
#include "cuda_emulation/toolkit_fp16_reference.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace entrograd::cuda_emulation::toolkit {

// Through the toolkit's __half_raw and __nv_bfloat16_raw, its own way in
// and out of the bits.
float HalfBitsToFloat(uint16_t bits) {
  __half_raw raw;
  raw.x = bits;
  return __half2float(__half(raw));
}
uint16_t FloatToHalfBits(float value) {
  return static_cast<__half_raw>(__float2half_rn(value)).x;
}
float BFloat16BitsToFloat(uint16_t bits) {
  __nv_bfloat16_raw raw;
  raw.x = bits;
  return __bfloat162float(__nv_bfloat16(raw));
}
uint16_t FloatToBFloat16Bits(float value) {
  return static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(value)).x;
}

}  // namespace entrograd::cuda_emulation::toolkit
