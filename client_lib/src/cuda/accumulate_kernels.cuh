// The kernels of the fused first pass of the CUDA path (ALGORITHM.md
// 5.1-5.3): one read of u, G (and V) writes A (and V'), adds |u| (or |A|)
// per interval in double, counts the first radix digit of |A| and notes the
// first non-finite u and A. Launched by accumulate_launch.cu, the only file
// that includes this one.
#ifndef ENTROGRAD_CUDA_ACCUMULATE_KERNELS_CUH_
#define ENTROGRAD_CUDA_ACCUMULATE_KERNELS_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/cuda_compat.cuh"
#include "cuda/device_math.cuh"
#include "cuda/kernels.h"

namespace entrograd {
namespace cuda {
namespace internal {

constexpr int kAccumulateThreads = 256;
constexpr int kAccumulateWarps = kAccumulateThreads / 32;
// Elements per thread per unrolled step: loads of several elements are in
// flight at once, which the memory system needs to reach its bandwidth.
constexpr int kAccumulateUnroll = 4;

// A fixed-shape tree: the same inputs give the same sum on every launch.
__device__ double BlockSumInFixedOrder(double value, double* warp_sums) {
  for (int offset = 16; offset > 0; offset /= 2) {
    value += __shfl_down_sync(0xFFFFFFFFu, value, offset);
  }
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) warp_sums[warp] = value;
  __syncthreads();
  double total = 0.0;
  if (threadIdx.x == 0) {
    for (int w = 0; w < kAccumulateWarps; ++w) total += warp_sums[w];
  }
  return total;  // meaningful in thread 0 only
}

// What A is made of (ALGORITHM.md 5.1): u itself for a layer sent whole
// (copied, as on the CPU: 0 + u would turn -0.0 into +0.0), G + u, or G + V'
// with V' = mu V + u under momentum correction.
enum class AccumulateKind { kWhole, kResidual, kMomentum };

// One block per (interval, tile). Each thread adds its elements in index
// order, the block adds the threads in a fixed tree, and the partial sums go
// to partials[blockIdx.x]; FinalizeIntervalSums adds them per interval in
// tile order. No floating-point atomics anywhere.
template <typename GradientT, AccumulateKind kKind>
__global__ void __launch_bounds__(kAccumulateThreads) AccumulateKernel(
    const GradientT* __restrict__ gradient, const float* __restrict__ residual,
    const float* __restrict__ velocity, float* __restrict__ accumulated,
    float* __restrict__ next_velocity, float momentum,
    bool measure_accumulated, uint64_t n, uint64_t m,
    uint64_t tiles_per_interval, double* __restrict__ partials,
    uint32_t* __restrict__ histogram, uint32_t* __restrict__ first_bad) {
  __shared__ uint32_t bins[kFirstDigitBins];
  __shared__ double warp_sums[kAccumulateWarps];
  for (int b = threadIdx.x; b < kFirstDigitBins; b += kAccumulateThreads)
    bins[b] = 0;
  __syncthreads();

  const uint64_t interval = blockIdx.x / tiles_per_interval;
  const uint64_t tile = blockIdx.x % tiles_per_interval;
  const uint64_t interval_end = DeviceIntervalBegin(interval + 1, n, m);
  const uint64_t begin = min(DeviceIntervalBegin(interval, n, m) +
                                 tile * static_cast<uint64_t>(kAccumulateTile),
                             interval_end);
  const uint64_t end =
      min(begin + static_cast<uint64_t>(kAccumulateTile), interval_end);

  constexpr bool kReadsResidual = kKind != AccumulateKind::kWhole;
  constexpr bool kReadsVelocity = kKind == AccumulateKind::kMomentum;
  double abs_sum = 0.0;
  uint32_t bad_gradient = kNoElement;
  uint32_t bad_accumulated = kNoElement;
  auto process = [&](uint64_t j, float u, float g, float v) {
    if (!isfinite(u) && bad_gradient == kNoElement) {
      bad_gradient = static_cast<uint32_t>(j);
    }
    float a = u;
    if constexpr (kKind == AccumulateKind::kMomentum) {
      const float increment = DeviceNextVelocity(momentum, v, u);
      next_velocity[j] = increment;
      a = DeviceAccumulated(g, increment);
    } else if constexpr (kKind == AccumulateKind::kResidual) {
      a = DeviceAccumulated(g, u);
    }
    accumulated[j] = a;
    abs_sum += fabs(static_cast<double>(measure_accumulated ? a : u));
    const uint32_t key = DeviceMagnitudeKey(a);
    if (key >= kDeviceNonFiniteKey && bad_accumulated == kNoElement) {
      bad_accumulated = static_cast<uint32_t>(j);
    }
    atomicAdd(&bins[key >> kFirstDigitShift], 1u);
  };

  uint64_t j = begin + threadIdx.x;
  constexpr uint64_t kStride = kAccumulateThreads;
  for (; j + (kAccumulateUnroll - 1) * kStride < end;
       j += kAccumulateUnroll * kStride) {
    float u[kAccumulateUnroll], g[kAccumulateUnroll], v[kAccumulateUnroll];
#pragma unroll
    for (int r = 0; r < kAccumulateUnroll; ++r) {
      u[r] = ToFloat(gradient[j + r * kStride]);
      g[r] = kReadsResidual ? residual[j + r * kStride] : 0.0f;
      v[r] = kReadsVelocity ? velocity[j + r * kStride] : 0.0f;
    }
#pragma unroll
    for (int r = 0; r < kAccumulateUnroll; ++r)
      process(j + r * kStride, u[r], g[r], v[r]);
  }
  for (; j < end; j += kStride) {
    process(j, ToFloat(gradient[j]), kReadsResidual ? residual[j] : 0.0f,
            kReadsVelocity ? velocity[j] : 0.0f);
  }

  // Each thread saw its elements in increasing index order, so its first
  // non-finite element is its smallest; the minimum over threads is the
  // first in the layer (integer atomics: order does not matter).
  if (bad_gradient != kNoElement) atomicMin(&first_bad[0], bad_gradient);
  if (bad_accumulated != kNoElement) atomicMin(&first_bad[1], bad_accumulated);

  const double block_sum = BlockSumInFixedOrder(abs_sum, warp_sums);
  if (threadIdx.x == 0) partials[blockIdx.x] = block_sum;
  __syncthreads();  // every shared-memory count is in
  for (int b = threadIdx.x; b < kFirstDigitBins; b += kAccumulateThreads) {
    if (bins[b] != 0) atomicAdd(&histogram[b], bins[b]);
  }
}

// sums[i] = the partials of interval i added in tile order.
__global__ void FinalizeIntervalSumsKernel(const double* __restrict__ partials,
                                           uint64_t m,
                                           uint64_t tiles_per_interval,
                                           double* __restrict__ sums) {
  const uint64_t i =
      blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (i >= m) return;
  double sum = 0.0;
  for (uint64_t t = 0; t < tiles_per_interval; ++t) {
    sum += partials[i * tiles_per_interval + t];
  }
  sums[i] = sum;
}

}  // namespace internal
}  // namespace cuda
}  // namespace entrograd

#endif  // ENTROGRAD_CUDA_ACCUMULATE_KERNELS_CUH_
