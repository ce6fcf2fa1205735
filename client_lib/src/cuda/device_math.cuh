// Device-side arithmetic shared by the kernels: the magnitude key, the
// interval boundaries and the widening of half-precision gradients. Each
// mirrors its CPU counterpart exactly (core/magnitude_key.h,
// entrograd/entropy.h IntervalBegin, core/accumulate.h). Private.
#ifndef ENTROGRAD_CUDA_DEVICE_MATH_CUH_
#define ENTROGRAD_CUDA_DEVICE_MATH_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/cuda_compat.cuh"

namespace entrograd {
namespace cuda {
namespace internal {

// The IEEE bit pattern of |x|: ordered like the magnitudes for finite x.
__device__ __forceinline__ uint32_t DeviceMagnitudeKey(float x) {
  return __float_as_uint(x) & 0x7FFFFFFFu;
}

// Keys at or above this are Inf or NaN.
inline constexpr uint32_t kDeviceNonFiniteKey = 0x7F800000u;

// First element of interval i of n elements in m intervals:
// floor(i * n / m). i * n < 2^64 because i <= m <= n < 2^32.
__device__ __forceinline__ uint64_t DeviceIntervalBegin(uint64_t i, uint64_t n,
                                                        uint64_t m) {
  return i * n / m;
}

// Exact widening to float.
__device__ __forceinline__ float ToFloat(float x) { return x; }
__device__ __forceinline__ float ToFloat(__half x) { return __half2float(x); }
__device__ __forceinline__ float ToFloat(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

// ALGORITHM.md 5.1 with the CPU's rounding: a multiply and an add, each
// rounded, never contracted into an FMA (the CPU core is built with
// -ffp-contract=off; the _rn intrinsics are never contracted).
__device__ __forceinline__ float DeviceNextVelocity(float momentum,
                                                    float velocity,
                                                    float gradient) {
  return __fadd_rn(__fmul_rn(momentum, velocity), gradient);
}
__device__ __forceinline__ float DeviceAccumulated(float residual,
                                                   float increment) {
  return __fadd_rn(residual, increment);
}

}  // namespace internal
}  // namespace cuda
}  // namespace entrograd

#endif  // ENTROGRAD_CUDA_DEVICE_MATH_CUH_
