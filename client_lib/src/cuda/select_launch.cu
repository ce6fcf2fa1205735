// Launchers of the exact top-k by magnitude on the GPU (ALGORITHM.md 5.5-5.6):
// a three-digit radix select over |A|'s bit pattern, then an ordered
// compaction, then the gather of the sent values and the masking of A and V'.
//
//   digit 1 (bits 30..20): histogram from the accumulate pass -> bucket b1
//   candidates: one ordered pass over A keeps every index whose digit 1 is
//     >= b1 (cub::DeviceSelect::If, stable)          -> C entries, C >= k
//   digit 2 (bits 19..9), digit 3 (bits 8..0): histograms over the
//     candidates in bucket b1 -> the exact k-th largest key T and how many
//     entries equal to T are taken (the first ones in index order)
//   compaction: candidates with key > T, or key == T among the first taken,
//     in index order -> the k indices
//
// Every intermediate count lives in SelectState on the device: the host
// launches the whole chain without waiting.
#include <algorithm>

#include "cuda/cub_compat.cuh"
#include "cuda/cuda_compat.cuh"
#include "cuda/device_math.cuh"
#include "cuda/kernels.h"
#include "cuda/select_kernels.cuh"

namespace entrograd {
namespace cuda {
namespace internal {

namespace {

// Predicates of the ordered passes over A (cub::DeviceSelect::If over the
// indices 0..n-1).
struct InOrAboveFirstDigit {
  const float* accumulated;
  const SelectState* state;
  __device__ bool operator()(uint32_t index) const {
    return (DeviceMagnitudeKey(accumulated[index]) >> kFirstDigitShift) >=
           (state->prefix >> kFirstDigitShift);
  }
};

struct AtLeastKey {
  const float* accumulated;
  uint32_t threshold_key;
  __device__ bool operator()(uint32_t index) const {
    return DeviceMagnitudeKey(accumulated[index]) >= threshold_key;
  }
};

using IndexIterator = thrust::counting_iterator<uint32_t>;

template <typename Predicate>
cudaError_t SelectIndices(void* temp, size_t* temp_bytes, Predicate predicate,
                          int64_t n, uint32_t* out, int64_t* count,
                          cudaStream_t stream) {
  return cub::DeviceSelect::If(temp, *temp_bytes, IndexIterator(0u), out, count,
                               n, predicate, stream);
}

uint64_t Blocks(uint64_t items, int threads) {
  return std::max<uint64_t>(1, (items + threads - 1) / threads);
}

}  // namespace

cudaError_t SelectTempBytes(int64_t n, size_t* bytes) {
  size_t top_k = 0, at_least = 0;
  cudaError_t error = SelectIndices(nullptr, &top_k, InOrAboveFirstDigit{}, n,
                                    nullptr, nullptr, nullptr);
  if (error != cudaSuccess) return error;
  error = SelectIndices(nullptr, &at_least, AtLeastKey{}, n, nullptr, nullptr,
                        nullptr);
  *bytes = std::max(top_k, at_least);
  return error;
}

cudaError_t LaunchSelectTopK(const SelectLaunch& launch, cudaStream_t stream) {
  SelectState* state = launch.state;
  uint32_t* second_histogram = launch.digit_histograms;
  uint32_t* third_histogram = launch.digit_histograms + kSecondDigitBins;
  cudaError_t error = cudaMemsetAsync(
      launch.digit_histograms, 0,
      (kSecondDigitBins + kThirdDigitBins) * sizeof(uint32_t), stream);
  if (error != cudaSuccess) return error;
  error = cudaMemsetAsync(state, 0, sizeof(SelectState), stream);
  if (error != cudaSuccess) return error;

  // Digit 1 from the accumulate pass's histogram.
  error = LaunchKernel(FindBucketKernel<kFirstDigitBins>, 1, kFindThreads,
                       stream, launch.first_digit_histogram, kFirstDigitShift,
                       /*first_digit=*/true, static_cast<uint32_t>(launch.k),
                       state);
  if (error != cudaSuccess) return error;
  // The candidates, in index order.
  size_t temp_bytes = launch.cub_temp_bytes;
  error =
      SelectIndices(launch.cub_temp, &temp_bytes,
                    InOrAboveFirstDigit{launch.accumulated, state}, launch.n,
                    launch.candidates, &state->candidate_count, stream);
  if (error != cudaSuccess) return error;
  // Digits 2 and 3 over the candidates of the boundary bucket.
  const int blocks = launch.refine_blocks;
  error =
      LaunchKernel(RefineHistogramKernel<kSecondDigitShift, kSecondDigitBins,
                                         kFirstDigitShift>,
                   blocks, kRefineThreads, stream, launch.accumulated,
                   launch.candidates, state, second_histogram);
  if (error != cudaSuccess) return error;
  error = LaunchKernel(FindBucketKernel<kSecondDigitBins>, 1, kFindThreads,
                       stream, second_histogram, kSecondDigitShift,
                       /*first_digit=*/false, 0, state);
  if (error != cudaSuccess) return error;
  error =
      LaunchKernel(RefineHistogramKernel<0, kThirdDigitBins, kSecondDigitShift>,
                   blocks, kRefineThreads, stream, launch.accumulated,
                   launch.candidates, state, third_histogram);
  if (error != cudaSuccess) return error;
  error =
      LaunchKernel(FindBucketKernel<kThirdDigitBins>, 1, kFindThreads, stream,
                   third_histogram, 0, /*first_digit=*/false, 0, state);
  if (error != cudaSuccess) return error;
  // Ordered compaction of the candidates.
  uint32_t* above_counts = launch.block_counts;
  uint32_t* equal_counts = above_counts + kCompactBlocks;
  uint32_t* equal_offsets = equal_counts + kCompactBlocks;
  uint32_t* output_offsets = equal_offsets + kCompactBlocks;
  error = LaunchKernel(CountAboveAndEqualKernel, kCompactBlocks,
                       kCompactThreads, stream, launch.accumulated,
                       launch.candidates, state, above_counts, equal_counts);
  if (error != cudaSuccess) return error;
  error = LaunchKernel(CompactionOffsetsKernel, 1, kCompactBlocks, stream,
                       above_counts, equal_counts, state, equal_offsets,
                       output_offsets);
  if (error != cudaSuccess) return error;
  error = LaunchKernel(WriteSelectedKernel, kCompactBlocks, kCompactThreads,
                       stream, launch.accumulated, launch.candidates, state,
                       equal_offsets, output_offsets, launch.out_indices);
  if (error != cudaSuccess) return error;
  return LaunchGatherAndMask(launch.accumulated, launch.next_velocity,
                             launch.out_indices, launch.k, launch.out_values,
                             stream);
}

cudaError_t LaunchSelectAtLeast(const float* accumulated, int64_t n,
                                uint32_t threshold_key, uint32_t* out_indices,
                                int64_t* count, void* cub_temp,
                                size_t cub_temp_bytes, cudaStream_t stream) {
  size_t temp_bytes = cub_temp_bytes;
  return SelectIndices(cub_temp, &temp_bytes,
                       AtLeastKey{accumulated, threshold_key}, n, out_indices,
                       count, stream);
}

cudaError_t LaunchGatherAndMask(float* accumulated, float* next_velocity,
                                const uint32_t* indices, int64_t k,
                                float* values, cudaStream_t stream) {
  if (k <= 0) return cudaSuccess;
  return LaunchKernel(GatherAndMaskKernel,
                      Blocks(static_cast<uint64_t>(k), kGatherThreads),
                      kGatherThreads, stream, accumulated, next_velocity,
                      indices, static_cast<uint64_t>(k), values);
}

}  // namespace internal
}  // namespace cuda
}  // namespace entrograd
