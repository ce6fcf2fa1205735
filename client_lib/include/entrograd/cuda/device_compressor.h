// DeviceLayerCompressor: ALGORITHM.md steps 5.1 to 5.6 for one layer whose
// gradient lives in CUDA device memory. The same contract as the CPU
// LayerCompressor (entrograd/layer_compressor.h), which stays the reference:
// for the same gradient, state, options and k it gives the same k, the same
// indices, bitwise the same values, residual and velocity, and the entropy to
// within 1e-6 relative (the interval sums are added in a different, but
// fixed, order).
//
//   Accumulate: one fused pass over u, G (and V) writes A (and V'), the
//     per-interval sums of |u| or |A| (double, fixed-order tree per tile) and a
//     2048-bin histogram of the top 11 bits of |A|'s bit pattern. The host
//     reads back the m interval sums (it needs the entropy to choose k).
//   Select(k): a radix select on |A|'s bit pattern (11 + 11 + 9 bits) finds
//     the exact k-th largest magnitude, ties going to the smaller index. The
//     first digit comes from Accumulate's histogram; one ordered pass over A
//     keeps the entries in or above the boundary bucket; the last two digits
//     and the ordered compaction run on those candidates only. Then the
//     selected values are gathered and masked out of A (and V'), and A, V'
//     become G, V. No host round trip inside a selection: k is a launch
//     argument and every intermediate count stays on the device.
//
// A layer sent whole (IsSentWhole) reads neither G nor V: A = u exactly, G
// and V stay 0, as on the CPU.
//
// Determinism: no floating-point atomics anywhere; integer histograms and
// counters use atomics, which do not change their results. Same inputs give
// the same bytes on every run and on every GPU.
//
// Streams: every call takes the caller's stream and enqueues its work there.
// Accumulate waits for that stream (cudaStreamSynchronize, not a device-wide
// sync) to read back the interval sums; a top-k selection does not wait at
// all; the threshold policy waits once for the count. Calls on one compressor
// must be ordered: the same stream, or a stream the caller has synchronised
// with the previous call's.
//
// Memory (allocated once, at Create; nothing is allocated per call):
//   per layer: G, A, out values (float) and out indices (uint32), n each; with
//   momentum correction also V and V'. So 16 n bytes, 24 n with momentum.
//   per workspace (shareable by the layers compressed on one stream, one at a
//   time): candidates (4 n_max bytes) plus O(M + n_max / 16384) scratch.
//
// Thread safety: a DeviceLayerCompressor is not thread-safe; a DeviceWorkspace
// must not be used by two selections at the same time (use one per stream).
#ifndef ENTROGRAD_CUDA_DEVICE_COMPRESSOR_H_
#define ENTROGRAD_CUDA_DEVICE_COMPRESSOR_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "entrograd/compression_options.h"
#include "entrograd/entropy.h"
#include "entrograd/held_share.h"
#include "entrograd/layer_compressor.h"

namespace entrograd {
namespace cuda {

// OK when a CUDA device can be used from this process; otherwise UNAVAILABLE
// with the reason (no driver, driver too old for this build, no device).
absl::Status CheckCudaDeviceAvailable();

// The element type of a gradient in device memory. Half and bfloat16
// gradients are widened to float (exactly) before anything else.
enum class GradientType { kFloat32, kFloat16, kBFloat16 };

// Bytes per element of `type`.
int GradientTypeSize(GradientType type);

// Device scratch shared by the compressors of layers of at most max_numel
// elements that run on one stream one at a time. Owns its device memory.
class DeviceWorkspace {
 public:
  // Allocates on the current device. Errors: INVALID_ARGUMENT for max_numel
  // outside [1, 2^32 - 1] or max_intervals < 1; RESOURCE_EXHAUSTED when the
  // device memory cannot be allocated; UNAVAILABLE without a usable device.
  static absl::StatusOr<std::shared_ptr<DeviceWorkspace>> Create(
      int64_t max_numel, int64_t max_intervals);

  ~DeviceWorkspace();
  DeviceWorkspace(const DeviceWorkspace&) = delete;
  DeviceWorkspace& operator=(const DeviceWorkspace&) = delete;

  // Debugging aid: checks the device-side bookkeeping of the last top-k
  // selection (1 <= k < n) made with this workspace (every histogram held
  // enough entries, at least k candidates were kept); waits for `stream`.
  // Errors: INTERNAL naming the counts when they are inconsistent, or for a
  // CUDA error.
  absl::Status CheckLastSelection(int64_t k, cudaStream_t stream) const;

  int64_t max_numel() const { return max_numel_; }
  int64_t max_intervals() const { return max_intervals_; }
  int device() const { return device_; }

 private:
  friend class DeviceLayerCompressor;
  DeviceWorkspace(int64_t max_numel, int64_t max_intervals, int device)
      : max_numel_(max_numel), max_intervals_(max_intervals), device_(device) {}
  absl::Status Allocate();

  const int64_t max_numel_;
  const int64_t max_intervals_;
  const int device_;
  void* memory_ = nullptr;  // one cudaMalloc, carved into the fields below
  double* interval_partials_ = nullptr;
  uint32_t* candidates_ = nullptr;
  uint32_t* digit_histograms_ = nullptr;  // second and third digit
  uint32_t* block_counts_ = nullptr;      // ordered compaction bookkeeping
  void* select_state_ = nullptr;          // internal SelectState
  void* cub_temp_ = nullptr;
  size_t cub_temp_bytes_ = 0;
};

// What one layer sends for one step, left in device memory owned by the
// compressor. Valid until the next call on that compressor.
struct DeviceCompressedLayer {
  int64_t step = 0;
  int64_t numel = 0;
  int64_t k = 0;                      // entries sent (numel when dense)
  EntropyStats entropy;               // of u (of A: options.entropy_of)
  double keep_ratio = 0.0;            // as in CompressedLayer
  bool dense = false;                 // all of A sent; no indices
  const uint32_t* indices = nullptr;  // device, k ascending (null when dense)
  const float* values = nullptr;      // device, k values (numel when dense)
};

class DeviceLayerCompressor {
 public:
  // Creates the compressor of a layer of `numel` elements on the current
  // device, with G = 0 and V = 0. `workspace` may be shared with other
  // layers (see DeviceWorkspace); null makes a private one. Errors:
  // INVALID_ARGUMENT for numel outside [1, 2^32 - 1], invalid options, or a
  // workspace that is too small or on another device, or more intervals
  // than blocks a grid can hold (m * ceil(ceil(n / m) / 16384) >= 2^31,
  // far beyond any useful M); RESOURCE_EXHAUSTED
  // when device memory runs out; UNAVAILABLE without a usable device.
  static absl::StatusOr<std::unique_ptr<DeviceLayerCompressor>> Create(
      int64_t numel, const CompressionOptions& options,
      std::shared_ptr<DeviceWorkspace> workspace = nullptr);

  ~DeviceLayerCompressor();
  DeviceLayerCompressor(const DeviceLayerCompressor&) = delete;
  DeviceLayerCompressor& operator=(const DeviceLayerCompressor&) = delete;

  // Whole step with the configured policy. `gradient` is a device pointer to
  // numel elements of `type`. Errors: those of Accumulate and Select;
  // FAILED_PRECONDITION for kEntropyBudget.
  absl::Status Compress(const void* gradient, GradientType type, int64_t step,
                        cudaStream_t stream, DeviceCompressedLayer* out);

  // Phase 1 (5.1-5.3): computes A (and V') into device scratch and returns
  // the gradient's interval entropy; waits for `stream`. A pending
  // accumulation is replaced. The caller guarantees that `gradient` points
  // to numel elements of `type` on this compressor's device (a device
  // pointer carries no length to check). Errors: INVALID_ARGUMENT when the
  // gradient holds NaN/Inf (naming the first such element, as on the CPU) or is
  // null; INTERNAL for a CUDA error. G and V are unchanged on error.
  absl::StatusOr<EntropyStats> Accumulate(const void* gradient,
                                          GradientType type,
                                          cudaStream_t stream);

  // Phase 2 (5.5-5.6) with an explicit k in [0, numel]: selects, fills *out
  // and commits G (and V). Does not wait for the stream. Errors:
  // FAILED_PRECONDITION without a pending Accumulate; INVALID_ARGUMENT for k
  // out of range, k != numel for a layer sent whole, or an A that overflowed
  // to Inf (naming the element, as on the CPU); INTERNAL for a CUDA error.
  // G and V are unchanged on error.
  absl::Status SelectTopK(int64_t k, int64_t step, double keep_ratio,
                          cudaStream_t stream, DeviceCompressedLayer* out);

  // Phase 2 with the configured policy (not kEntropyBudget). The threshold
  // policy waits for the stream once, to learn k. Under share_hold_steps > 1
  // the policy sees the held share, as on the CPU.
  absl::Status SelectWithPolicy(int64_t step, cudaStream_t stream,
                                DeviceCompressedLayer* out);

  // Drops a pending accumulation; G and V stay as they were.
  void DiscardPending() { pending_ = false; }

  int64_t numel() const { return numel_; }
  const CompressionOptions& options() const { return options_; }
  // As LayerCompressor::sent_whole.
  bool sent_whole() const { return sent_whole_; }
  int device() const { return device_; }
  const std::shared_ptr<DeviceWorkspace>& workspace() const {
    return workspace_;
  }

  // Device pointers to G and V (null without momentum correction), valid
  // until the next non-const call.
  const float* device_residual() const { return residual_; }
  const float* device_velocity() const { return velocity_; }

  // Copies G (and V; empty without momentum correction) to the host; waits
  // for `stream`. Errors: INTERNAL for a CUDA error.
  absl::Status CopyStateToHost(std::vector<float>* residual,
                               std::vector<float>* velocity,
                               cudaStream_t stream) const;

  // Replaces G and V from host memory (e.g. a checkpoint); waits for
  // `stream`. Errors: INVALID_ARGUMENT as LayerCompressor::RestoreState;
  // state unchanged on error.
  absl::Status RestoreState(absl::Span<const float> residual,
                            absl::Span<const float> velocity,
                            cudaStream_t stream);

  // As LayerCompressor::held_share and RestoreHeldShare (host state).
  const HeldShare& held_share() const { return held_share_; }
  absl::Status RestoreHeldShare(const HeldShare& held);

 private:
  DeviceLayerCompressor(int64_t numel, const CompressionOptions& options,
                        std::shared_ptr<DeviceWorkspace> workspace, int device);
  absl::Status Allocate();
  absl::Status SelectAndCommit(int64_t k, int64_t step, double keep_ratio,
                               cudaStream_t stream, DeviceCompressedLayer* out);
  absl::Status SelectThresholdAndCommit(int64_t step, cudaStream_t stream,
                                        DeviceCompressedLayer* out);
  absl::Status CommitDense(int64_t step, double keep_ratio, cudaStream_t stream,
                           DeviceCompressedLayer* out);
  absl::Status SelectWithDecision(const KeepDecision& decision, int64_t step,
                                  cudaStream_t stream,
                                  DeviceCompressedLayer* out);
  absl::Status CheckAccumulatedFinite(cudaStream_t stream) const;
  void FillHeader(int64_t step, double keep_ratio,
                  DeviceCompressedLayer* out) const;
  void SwapInPending();

  const int64_t numel_;
  const CompressionOptions options_;
  const bool sent_whole_;
  const std::shared_ptr<DeviceWorkspace> workspace_;
  const int device_;
  const int64_t intervals_;    // m = min(M, n)
  void* memory_ = nullptr;     // one cudaMalloc for the per-layer buffers
  float* residual_ = nullptr;  // G
  float* velocity_ = nullptr;  // V (momentum correction only)
  float* pending_accumulated_ = nullptr;  // A
  float* pending_velocity_ = nullptr;     // V'
  float* out_values_ = nullptr;
  uint32_t* out_indices_ = nullptr;
  uint32_t* first_digit_histogram_ = nullptr;  // of |A|, from Accumulate
  uint32_t* first_bad_ = nullptr;  // [0]: in u, [1]: in A; 0xFFFFFFFF = none
  void* host_readback_ = nullptr;  // pinned: m sums, the two bad indices
  EntropyStats pending_entropy_;
  uint32_t pending_first_bad_accumulated_ = 0xFFFFFFFFu;
  int refine_blocks_ = 0;  // grid of the selection's candidate passes
  bool pending_ = false;
  HeldShare held_share_;
};

// Copies a device result into a host CompressedLayer (what the transport
// sends); waits for `stream`. Errors: INTERNAL for a CUDA error.
absl::Status CopyToHost(const DeviceCompressedLayer& layer, cudaStream_t stream,
                        CompressedLayer* out);

}  // namespace cuda
}  // namespace entrograd

#endif  // ENTROGRAD_CUDA_DEVICE_COMPRESSOR_H_
