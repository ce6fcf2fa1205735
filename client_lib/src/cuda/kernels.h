// Launchers of the CUDA kernels of the compression core. Host code includes
// this header; the kernels themselves live in the .cu files. Every launcher
// only enqueues work on the given stream and returns the launch error.
// Private to the CUDA path.
#ifndef ENTROGRAD_CUDA_KERNELS_H_
#define ENTROGRAD_CUDA_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "entrograd/cuda/device_compressor.h"

namespace entrograd {
namespace cuda {
namespace internal {

// The radix select works on the 31-bit magnitude key of a float (its bit
// pattern without the sign; see core/magnitude_key.h) in three digits:
// bits 30..20 and 19..9 (2048 bins each) and bits 8..0 (512 bins).
inline constexpr int kFirstDigitShift = 20;
inline constexpr int kSecondDigitShift = 9;
inline constexpr int kFirstDigitBins = 2048;
inline constexpr int kSecondDigitBins = 2048;
inline constexpr int kThirdDigitBins = 512;

// Elements of one interval handled by one block of the accumulate pass.
// Intervals are split into tiles of this size so that the interval sums are
// added in an order that depends only on (n, m), never on the GPU.
inline constexpr int64_t kAccumulateTile = 16384;

// Blocks of the ordered compaction over the candidates. Fixed, so that the
// bookkeeping arrays have a fixed size; the result does not depend on it.
inline constexpr int kCompactBlocks = 512;

// Sentinel of the first-non-finite-element indices.
inline constexpr uint32_t kNoElement = 0xFFFFFFFFu;

// Selection state that stays on the device between the kernels of one
// selection, so that the host never waits inside it.
struct SelectState {
  uint32_t prefix;          // the threshold key's bits decided so far
  uint32_t remaining;       // entries still to take among those matching prefix
  int64_t candidate_count;  // entries kept by the ordered candidate pass
  uint32_t error;           // nonzero: a histogram held too few entries
  uint32_t padding;
};

// Tiles per interval: ceil(ceil(n / m) / kAccumulateTile). The accumulate
// pass runs m * TilesPerInterval(n, m) blocks.
int64_t TilesPerInterval(int64_t n, int64_t m);

// Upper bound of m * TilesPerInterval(n, m) over every n <= max_numel and
// m = min(max_intervals, n): the size of the partial-sum scratch.
int64_t MaxIntervalPartials(int64_t max_numel, int64_t max_intervals);

struct AccumulateLaunch {
  const void* gradient = nullptr;  // u, n elements of `type`
  GradientType type = GradientType::kFloat32;
  // G, or null: a layer sent whole, A = u exactly (velocity null too).
  const float* residual = nullptr;
  const float* velocity = nullptr;  // V, or null: no momentum correction
  float* accumulated = nullptr;     // out: A
  float* next_velocity = nullptr;   // out: V' (momentum correction only)
  float momentum = 0.0f;
  int64_t n = 0;
  int64_t m = 0;
  double* interval_partials = nullptr;        // scratch, MaxIntervalPartials
  double* interval_sums = nullptr;            // out: m sums of |u| (or |A|)
  bool measure_accumulated = false;  // sum |A| (EntropySource::kAccumulated)
  uint32_t* first_digit_histogram = nullptr;  // out: kFirstDigitBins, zeroed
                                              // here before counting
  uint32_t* first_bad = nullptr;  // out: [0] first non-finite u, [1] first
                                  // non-finite A, or kNoElement
};

// The fused first pass (5.1-5.3) and the fixed-order sum of the partials.
cudaError_t LaunchAccumulate(const AccumulateLaunch& launch,
                             cudaStream_t stream);

struct SelectLaunch {
  float* accumulated = nullptr;    // A; selected entries zeroed
  float* next_velocity = nullptr;  // V'; selected entries zeroed, or null
  int64_t n = 0;
  int64_t k = 0;                                    // 1 <= k < n
  const uint32_t* first_digit_histogram = nullptr;  // from LaunchAccumulate
  uint32_t* digit_histograms = nullptr;  // scratch: second + third digit bins
  uint32_t* candidates = nullptr;        // scratch: n entries
  uint32_t* block_counts = nullptr;      // scratch: 4 * kCompactBlocks
  SelectState* state = nullptr;          // scratch
  void* cub_temp = nullptr;              // scratch: SelectTempBytes(n)
  size_t cub_temp_bytes = 0;
  int refine_blocks = 0;            // grid of the refine passes
  uint32_t* out_indices = nullptr;  // out: k ascending indices
  float* out_values = nullptr;      // out: A at those indices
};

// 5.5-5.6 for an explicit k: exact top-k by magnitude, ties to the smaller
// index, indices ascending, values gathered, A and V' masked.
cudaError_t LaunchSelectTopK(const SelectLaunch& launch, cudaStream_t stream);

// The constant-threshold baseline: every entry with key >= threshold_key,
// ascending, into out_indices; the count into *count (device).
cudaError_t LaunchSelectAtLeast(const float* accumulated, int64_t n,
                                uint32_t threshold_key, uint32_t* out_indices,
                                int64_t* count, void* cub_temp,
                                size_t cub_temp_bytes, cudaStream_t stream);

// values[j] = A[indices[j]]; A[indices[j]] = 0; V'[indices[j]] = 0 (if
// next_velocity is not null), for j < k.
cudaError_t LaunchGatherAndMask(float* accumulated, float* next_velocity,
                                const uint32_t* indices, int64_t k,
                                float* values, cudaStream_t stream);

// Scratch bytes the CUB passes of both selections need for n elements.
cudaError_t SelectTempBytes(int64_t n, size_t* bytes);

}  // namespace internal
}  // namespace cuda
}  // namespace entrograd

#endif  // ENTROGRAD_CUDA_KERNELS_H_
