// The kernels of the exact top-k on the GPU (ALGORITHM.md 5.5-5.6):
// bucket search, candidate histograms, ordered compaction, gather and
// masking. Launched by select_launch.cu (the chain and its design are
// described there), the only file that includes this one.
#ifndef ENTROGRAD_CUDA_SELECT_KERNELS_CUH_
#define ENTROGRAD_CUDA_SELECT_KERNELS_CUH_

#include "cuda/cub_compat.cuh"
#include "cuda/cuda_compat.cuh"
#include "cuda/device_math.cuh"
#include "cuda/kernels.h"

namespace entrograd {
namespace cuda {
namespace internal {

constexpr int kFindThreads = 256;
constexpr int kRefineThreads = 256;
constexpr int kCompactThreads = 256;
constexpr int kGatherThreads = 256;

// Finds the bin of a histogram (scanned from the largest bin down) that
// holds the remaining-th largest entry, and narrows the state to it:
// prefix |= bin << shift; remaining -= entries in larger bins. On the first
// digit `initial_remaining` is k and the prefix starts at zero.
template <int kBins>
__global__ void __launch_bounds__(kFindThreads)
    FindBucketKernel(const uint32_t* __restrict__ histogram, int shift,
                     bool first_digit, uint32_t initial_remaining,
                     SelectState* state) {
  static_assert(kBins % kFindThreads == 0);
  constexpr int kPerThread = kBins / kFindThreads;
  using BlockScan = cub::BlockScan<uint32_t, kFindThreads>;
  __shared__ typename BlockScan::TempStorage scan_storage;

  const uint32_t remaining = first_digit ? initial_remaining : state->remaining;
  const uint32_t prefix = first_digit ? 0u : state->prefix;
  // Thread t owns positions t*kPerThread.. in descending bin order.
  uint32_t counts[kPerThread];
  uint32_t total = 0;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    counts[i] = histogram[kBins - 1 - (threadIdx.x * kPerThread + i)];
    total += counts[i];
  }
  uint32_t before = 0;  // entries in larger bins than this thread's
  uint32_t block_total = 0;
  BlockScan(scan_storage).ExclusiveSum(total, before, block_total);
  __syncthreads();  // everybody has read the state before it changes

  uint32_t running = before;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    if (running < remaining && remaining <= running + counts[i]) {
      const uint32_t bin = kBins - 1 - (threadIdx.x * kPerThread + i);
      state->prefix = prefix | (bin << shift);
      state->remaining = remaining - running;
    }
    running += counts[i];
  }
  if (threadIdx.x == 0 && block_total < remaining) state->error = 1;
}

// Digit 2 or 3: histogram of the candidates whose higher digits match the
// prefix. Integer shared-memory counts, flushed with integer atomics.
template <int kShift, int kBins, int kFilterShift>
__global__ void __launch_bounds__(kRefineThreads)
    RefineHistogramKernel(const float* __restrict__ accumulated,
                          const uint32_t* __restrict__ candidates,
                          const SelectState* __restrict__ state,
                          uint32_t* __restrict__ histogram) {
  __shared__ uint32_t bins[kBins];
  for (int b = threadIdx.x; b < kBins; b += kRefineThreads) bins[b] = 0;
  __syncthreads();
  const uint64_t count = static_cast<uint64_t>(state->candidate_count);
  const uint32_t wanted = state->prefix >> kFilterShift;
  for (uint64_t i =
           blockIdx.x * static_cast<uint64_t>(kRefineThreads) + threadIdx.x;
       i < count; i += static_cast<uint64_t>(gridDim.x) * kRefineThreads) {
    const uint32_t key = DeviceMagnitudeKey(accumulated[candidates[i]]);
    if ((key >> kFilterShift) == wanted) {
      atomicAdd(&bins[(key >> kShift) & (kBins - 1)], 1u);
    }
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += kRefineThreads) {
    if (bins[b] != 0) atomicAdd(&histogram[b], bins[b]);
  }
}

// The candidates are split into kCompactBlocks contiguous chunks; chunk b
// is [b * chunk, min((b + 1) * chunk, count)).
__device__ __forceinline__ void ChunkOf(uint64_t count, uint64_t* begin,
                                        uint64_t* end) {
  const uint64_t chunk = (count + kCompactBlocks - 1) / kCompactBlocks;
  *begin = min(count, blockIdx.x * chunk);
  *end = min(count, *begin + chunk);
}

// Per chunk: how many candidates are above the threshold key T, and how many
// equal it.
__global__ void __launch_bounds__(kCompactThreads)
    CountAboveAndEqualKernel(const float* __restrict__ accumulated,
                             const uint32_t* __restrict__ candidates,
                             const SelectState* __restrict__ state,
                             uint32_t* __restrict__ above_counts,
                             uint32_t* __restrict__ equal_counts) {
  using BlockScan = cub::BlockScan<uint32_t, kCompactThreads>;
  __shared__ typename BlockScan::TempStorage scan_storage;
  uint64_t begin, end;
  ChunkOf(static_cast<uint64_t>(state->candidate_count), &begin, &end);
  const uint32_t threshold = state->prefix;
  uint32_t above = 0, equal = 0;
  for (uint64_t i = begin + threadIdx.x; i < end; i += kCompactThreads) {
    const uint32_t key = DeviceMagnitudeKey(accumulated[candidates[i]]);
    above += key > threshold ? 1u : 0u;
    equal += key == threshold ? 1u : 0u;
  }
  uint32_t ignored, above_total, equal_total;
  BlockScan(scan_storage).ExclusiveSum(above, ignored, above_total);
  __syncthreads();
  BlockScan(scan_storage).ExclusiveSum(equal, ignored, equal_total);
  if (threadIdx.x == 0) {
    above_counts[blockIdx.x] = above_total;
    equal_counts[blockIdx.x] = equal_total;
  }
}

// One block: where each chunk's equal entries start in the index-ordered
// list of equal entries, and where each chunk's output starts.
__global__ void __launch_bounds__(kCompactBlocks)
    CompactionOffsetsKernel(const uint32_t* __restrict__ above_counts,
                            const uint32_t* __restrict__ equal_counts,
                            const SelectState* __restrict__ state,
                            uint32_t* __restrict__ equal_offsets,
                            uint32_t* __restrict__ output_offsets) {
  using BlockScan = cub::BlockScan<uint32_t, kCompactBlocks>;
  __shared__ typename BlockScan::TempStorage scan_storage;
  const uint32_t take_equal = state->remaining;
  const uint32_t equal = equal_counts[threadIdx.x];
  uint32_t equal_before = 0;
  BlockScan(scan_storage).ExclusiveSum(equal, equal_before);
  __syncthreads();
  const uint32_t equal_taken =
      equal_before >= take_equal ? 0u : min(equal, take_equal - equal_before);
  const uint32_t selected = above_counts[threadIdx.x] + equal_taken;
  uint32_t output_before = 0;
  BlockScan(scan_storage).ExclusiveSum(selected, output_before);
  equal_offsets[threadIdx.x] = equal_before;
  output_offsets[threadIdx.x] = output_before;
}

// Writes the selected candidates of each chunk, in index order, at the
// chunk's output offset.
__global__ void __launch_bounds__(kCompactThreads)
    WriteSelectedKernel(const float* __restrict__ accumulated,
                        const uint32_t* __restrict__ candidates,
                        const SelectState* __restrict__ state,
                        const uint32_t* __restrict__ equal_offsets,
                        const uint32_t* __restrict__ output_offsets,
                        uint32_t* __restrict__ out_indices) {
  using BlockScan = cub::BlockScan<uint32_t, kCompactThreads>;
  __shared__ typename BlockScan::TempStorage scan_storage;
  uint64_t begin, end;
  ChunkOf(static_cast<uint64_t>(state->candidate_count), &begin, &end);
  const uint32_t threshold = state->prefix;
  const uint32_t take_equal = state->remaining;
  uint32_t equal_rank = equal_offsets[blockIdx.x];
  uint32_t output = output_offsets[blockIdx.x];
  for (uint64_t tile = begin; tile < end; tile += kCompactThreads) {
    const uint64_t i = tile + threadIdx.x;
    uint32_t index = 0, key = 0;
    bool in_range = i < end;
    if (in_range) {
      index = candidates[i];
      key = DeviceMagnitudeKey(accumulated[index]);
    }
    const uint32_t is_equal = in_range && key == threshold ? 1u : 0u;
    uint32_t equal_before = 0, equal_in_tile = 0;
    BlockScan(scan_storage).ExclusiveSum(is_equal, equal_before, equal_in_tile);
    __syncthreads();
    const bool selected =
        in_range && (key > threshold ||
                     (is_equal != 0 && equal_rank + equal_before < take_equal));
    uint32_t selected_before = 0, selected_in_tile = 0;
    BlockScan(scan_storage)
        .ExclusiveSum(selected ? 1u : 0u, selected_before, selected_in_tile);
    __syncthreads();
    if (selected) out_indices[output + selected_before] = index;
    equal_rank += equal_in_tile;
    output += selected_in_tile;
  }
}

__global__ void __launch_bounds__(kGatherThreads)
    GatherAndMaskKernel(float* __restrict__ accumulated,
                        float* __restrict__ next_velocity,
                        const uint32_t* __restrict__ indices, uint64_t k,
                        float* __restrict__ values) {
  const uint64_t j =
      blockIdx.x * static_cast<uint64_t>(kGatherThreads) + threadIdx.x;
  if (j >= k) return;
  const uint32_t index = indices[j];
  values[j] = accumulated[index];
  accumulated[index] = 0.0f;
  if (next_velocity != nullptr) next_velocity[index] = 0.0f;
}

}  // namespace internal
}  // namespace cuda
}  // namespace entrograd

#endif  // ENTROGRAD_CUDA_SELECT_KERNELS_CUH_
