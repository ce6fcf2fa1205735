// Launchers of the fused first pass (accumulate_kernels.cuh): the tiling of
// intervals into blocks and the fixed-order sum of the partials.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "cuda/accumulate_kernels.cuh"
#include "cuda/cuda_compat.cuh"
#include "cuda/device_math.cuh"
#include "cuda/kernels.h"

namespace entrograd {
namespace cuda {
namespace internal {

namespace {

template <typename GradientT>
cudaError_t LaunchTyped(const AccumulateLaunch& launch, uint64_t blocks,
                        uint64_t tiles_per_interval, cudaStream_t stream) {
  const auto* gradient = static_cast<const GradientT*>(launch.gradient);
  const uint64_t n = static_cast<uint64_t>(launch.n);
  const uint64_t m = static_cast<uint64_t>(launch.m);
  if (launch.residual == nullptr) {
    return LaunchKernel(AccumulateKernel<GradientT, AccumulateKind::kWhole>,
                        blocks, kAccumulateThreads, stream, gradient, nullptr,
                        nullptr, launch.accumulated, nullptr, launch.momentum,
                        launch.measure_accumulated, n, m, tiles_per_interval,
                        launch.interval_partials, launch.first_digit_histogram,
                        launch.first_bad);
  }
  if (launch.velocity != nullptr) {
    return LaunchKernel(AccumulateKernel<GradientT, AccumulateKind::kMomentum>,
                        blocks, kAccumulateThreads, stream, gradient,
                        launch.residual, launch.velocity, launch.accumulated,
                        launch.next_velocity, launch.momentum,
                        launch.measure_accumulated, n, m, tiles_per_interval,
                        launch.interval_partials, launch.first_digit_histogram,
                        launch.first_bad);
  }
  return LaunchKernel(AccumulateKernel<GradientT, AccumulateKind::kResidual>,
                      blocks, kAccumulateThreads, stream, gradient,
                      launch.residual, nullptr, launch.accumulated, nullptr,
                      launch.momentum, launch.measure_accumulated, n, m,
                      tiles_per_interval, launch.interval_partials,
                      launch.first_digit_histogram, launch.first_bad);
}

}  // namespace

int64_t TilesPerInterval(int64_t n, int64_t m) {
  const int64_t longest = (n + m - 1) / m;
  return (longest + kAccumulateTile - 1) / kAccumulateTile;
}

int64_t MaxIntervalPartials(int64_t max_numel, int64_t max_intervals) {
  // m * ceil(ceil(n / m) / T) <= m * ((n / m + 1) / T + 1) <= 2 n / T + m + 1.
  const int64_t m = std::min(max_intervals, max_numel);
  return 2 * (max_numel / kAccumulateTile) + m + 2;
}

cudaError_t LaunchAccumulate(const AccumulateLaunch& launch,
                             cudaStream_t stream) {
  cudaError_t error =
      cudaMemsetAsync(launch.first_digit_histogram, 0,
                      kFirstDigitBins * sizeof(uint32_t), stream);
  if (error != cudaSuccess) return error;
  error = cudaMemsetAsync(launch.first_bad, 0xFF, 2 * sizeof(uint32_t), stream);
  if (error != cudaSuccess) return error;

  const uint64_t tiles =
      static_cast<uint64_t>(TilesPerInterval(launch.n, launch.m));
  const uint64_t blocks = static_cast<uint64_t>(launch.m) * tiles;
  switch (launch.type) {
    case GradientType::kFloat32:
      error = LaunchTyped<float>(launch, blocks, tiles, stream);
      break;
    case GradientType::kFloat16:
      error = LaunchTyped<__half>(launch, blocks, tiles, stream);
      break;
    case GradientType::kBFloat16:
      error = LaunchTyped<__nv_bfloat16>(launch, blocks, tiles, stream);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  if (error != cudaSuccess) return error;
  constexpr int kFinalizeThreads = 256;
  const uint64_t finalize_blocks =
      (static_cast<uint64_t>(launch.m) + kFinalizeThreads - 1) /
      kFinalizeThreads;
  return LaunchKernel(FinalizeIntervalSumsKernel, finalize_blocks,
                      kFinalizeThreads, stream, launch.interval_partials,
                      static_cast<uint64_t>(launch.m), tiles,
                      launch.interval_sums);
}

}  // namespace internal
}  // namespace cuda
}  // namespace entrograd
