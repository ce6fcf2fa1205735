// DeviceLayerCompressor: the host side of the CUDA path. It owns the layer's
// device buffers, launches the kernels (kernels.h) and applies the same
// keep-count policies and error rules as the CPU LayerCompressor.
#include "entrograd/cuda/device_compressor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "entrograd/common/status_macros.h"
#include "core/interval_sums.h"
#include "core/magnitude_key.h"
#include "core/phase_checks.h"
#include "cuda/cuda_status.h"
#include "cuda/device_layout.h"
#include "cuda/kernels.h"
#include "entrograd/keep_count.h"

namespace entrograd {
namespace cuda {

namespace {

using internal::kNoElement;

// The CPU path's names for what holds a non-finite value.
constexpr absl::string_view kGradientName = "gradient";
constexpr absl::string_view kAccumulatedName =
    "accumulated gradient (residual + gradient)";

absl::Status NonFiniteElementError(absl::string_view what, float value,
                                   uint32_t index) {
  return absl::InvalidArgumentError(absl::StrCat(
      what, " holds a non-finite value (", value, ") at element ", index));
}

// Reads element `index` of a device array of `type`, widened to float.
absl::StatusOr<float> ReadElement(const void* data, GradientType type,
                                  uint32_t index, cudaStream_t stream) {
  const size_t size = GradientTypeSize(type);
  uint32_t raw = 0;
  ENTROGRAD_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(&raw, static_cast<const char*>(data) + size * index, size,
                      cudaMemcpyDeviceToHost, stream));
  ENTROGRAD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  uint32_t bits = raw;
  if (type == GradientType::kBFloat16) {
    bits = raw << 16;  // bfloat16 is the top half of a float
  } else if (type == GradientType::kFloat16) {
    // Only non-finite halves are read here: the exponent is all ones.
    const uint32_t sign = (raw & 0x8000u) << 16;
    const uint32_t mantissa = (raw & 0x03FFu) << 13;
    bits = sign | 0x7F800000u | mantissa;
  }
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceLayerCompressor>>
DeviceLayerCompressor::Create(int64_t numel, const CompressionOptions& options,
                              std::shared_ptr<DeviceWorkspace> workspace) {
  ENTROGRAD_RETURN_IF_ERROR(ValidateCompressionOptions(options));
  ENTROGRAD_RETURN_IF_ERROR(CheckLayerNumel(numel));
  const int64_t m = std::min<int64_t>(options.intervals, numel);
  if (m * internal::TilesPerInterval(numel, m) > 0x7FFFFFFF) {
    return absl::InvalidArgumentError(absl::StrCat(
        "intervals = ", options.intervals, " is too many for a layer of ",
        numel, " elements on the CUDA path (one block per interval)"));
  }
  ENTROGRAD_RETURN_IF_ERROR(CheckCudaDeviceAvailable());
  int device = 0;
  ENTROGRAD_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  if (workspace == nullptr) {
    ENTROGRAD_ASSIGN_OR_RETURN(
        workspace, DeviceWorkspace::Create(numel, options.intervals));
  }
  if (workspace->max_numel() < numel ||
      workspace->max_intervals() <
          std::min<int64_t>(options.intervals, numel)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the workspace serves layers of up to ",
                     workspace->max_numel(), " elements and ",
                     workspace->max_intervals(), " intervals; this layer has ",
                     numel, " elements and ", m, " intervals"));
  }
  if (workspace->device() != device) {
    return absl::InvalidArgumentError(
        absl::StrCat("the workspace is on CUDA device ", workspace->device(),
                     "; the current device is ", device));
  }
  std::unique_ptr<DeviceLayerCompressor> compressor(
      new DeviceLayerCompressor(numel, options, std::move(workspace), device));
  ENTROGRAD_RETURN_IF_ERROR(compressor->Allocate());
  return compressor;
}

DeviceLayerCompressor::DeviceLayerCompressor(
    int64_t numel, const CompressionOptions& options,
    std::shared_ptr<DeviceWorkspace> workspace, int device)
    : numel_(numel),
      options_(options),
      sent_whole_(IsSentWhole(numel, options)),
      workspace_(std::move(workspace)),
      device_(device),
      intervals_(std::min<int64_t>(options.intervals, numel)) {}

absl::Status DeviceLayerCompressor::Allocate() {
  const size_t n = static_cast<size_t>(numel_);
  const bool momentum = options_.momentum_correction;
  DeviceLayout layout;
  layout.Add(&residual_, n);
  layout.Add(&pending_accumulated_, n);
  layout.Add(&out_values_, n);
  if (momentum) {
    layout.Add(&velocity_, n);
    layout.Add(&pending_velocity_, n);
  }
  layout.Add(&out_indices_, n);
  layout.Add(&first_digit_histogram_, internal::kFirstDigitBins);
  layout.Add(&first_bad_, 2);
  ENTROGRAD_RETURN_IF_ERROR(layout.Allocate(&memory_));
  // G = 0 and V = 0 (ALGORITHM.md step 2).
  ENTROGRAD_CUDA_RETURN_IF_ERROR(cudaMemset(residual_, 0, n * sizeof(float)));
  if (momentum) {
    ENTROGRAD_CUDA_RETURN_IF_ERROR(cudaMemset(velocity_, 0, n * sizeof(float)));
  }
  // Enough blocks to fill the GPU in the refine passes; the counts they
  // produce do not depend on it.
  int multiprocessors = 0;
  ENTROGRAD_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(
      &multiprocessors, cudaDevAttrMultiProcessorCount, device_));
  refine_blocks_ = 2 * std::max(1, multiprocessors);
  ENTROGRAD_CUDA_RETURN_IF_ERROR(cudaMallocHost(
      &host_readback_,
      static_cast<size_t>(intervals_) * sizeof(double) + 2 * sizeof(uint32_t)));
  return absl::OkStatus();
}

DeviceLayerCompressor::~DeviceLayerCompressor() {
  ScopedDevice on_device(device_);
  if (memory_ != nullptr) cudaFree(memory_);
  if (host_readback_ != nullptr) cudaFreeHost(host_readback_);
}

absl::Status DeviceLayerCompressor::Compress(const void* gradient,
                                             GradientType type, int64_t step,
                                             cudaStream_t stream,
                                             DeviceCompressedLayer* out) {
  ENTROGRAD_RETURN_IF_ERROR(CheckPolicyCompressesAlone(options_.policy));
  ENTROGRAD_RETURN_IF_ERROR(Accumulate(gradient, type, stream).status());
  return SelectWithPolicy(step, stream, out);
}

absl::StatusOr<EntropyStats> DeviceLayerCompressor::Accumulate(
    const void* gradient, GradientType type, cudaStream_t stream) {
  pending_ = false;
  if (gradient == nullptr) {
    return absl::InvalidArgumentError("gradient is a null device pointer");
  }
  if (type != GradientType::kFloat32 && type != GradientType::kFloat16 &&
      type != GradientType::kBFloat16) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gradient type ", static_cast<int>(type), " is not a GradientType"));
  }
  ScopedDevice on_device(device_);
  DeviceWorkspace& workspace = *workspace_;
  double* interval_sums = workspace.interval_partials_ +
                          internal::MaxIntervalPartials(
                              workspace.max_numel(), workspace.max_intervals());
  internal::AccumulateLaunch launch;
  launch.gradient = gradient;
  launch.type = type;
  if (!sent_whole_) {  // else A = u: G and V stay 0 (ALGORITHM.md 5.1)
    launch.residual = residual_;
    launch.velocity = velocity_;
    launch.next_velocity = pending_velocity_;
  }
  launch.accumulated = pending_accumulated_;
  launch.momentum = static_cast<float>(options_.momentum);
  launch.measure_accumulated =
      options_.entropy_of == EntropySource::kAccumulated;
  launch.n = numel_;
  launch.m = intervals_;
  launch.interval_partials = workspace.interval_partials_;
  launch.interval_sums = interval_sums;
  launch.first_digit_histogram = first_digit_histogram_;
  launch.first_bad = first_bad_;
  ENTROGRAD_CUDA_RETURN_IF_ERROR(internal::LaunchAccumulate(launch, stream));

  // The host needs the interval sums (the entropy decides k) and whether
  // anything was non-finite: the one wait of a top-k step.
  const size_t sum_bytes = static_cast<size_t>(intervals_) * sizeof(double);
  char* readback = static_cast<char*>(host_readback_);
  ENTROGRAD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
      readback, interval_sums, sum_bytes, cudaMemcpyDeviceToHost, stream));
  ENTROGRAD_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(readback + sum_bytes, first_bad_, 2 * sizeof(uint32_t),
                      cudaMemcpyDeviceToHost, stream));
  ENTROGRAD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));

  uint32_t first_bad[2];
  std::memcpy(first_bad, readback + sum_bytes, sizeof(first_bad));
  if (first_bad[0] != kNoElement) {
    ENTROGRAD_ASSIGN_OR_RETURN(
        float value, ReadElement(gradient, type, first_bad[0], stream));
    return NonFiniteElementError(kGradientName, value, first_bad[0]);
  }
  pending_first_bad_accumulated_ = first_bad[1];
  // Sums of |A| are non-finite when A overflowed: no entropy to decide from.
  if (launch.measure_accumulated) {
    ENTROGRAD_RETURN_IF_ERROR(CheckAccumulatedFinite(stream));
  }
  const auto* sums = reinterpret_cast<const double*>(readback);
  pending_entropy_ = EntropyFromIntervalSums(
      absl::MakeConstSpan(sums, static_cast<size_t>(intervals_)), numel_);
  pending_ = true;
  return pending_entropy_;
}

absl::Status DeviceLayerCompressor::SelectWithPolicy(
    int64_t step, cudaStream_t stream, DeviceCompressedLayer* out) {
  ENTROGRAD_RETURN_IF_ERROR(CheckPending(pending_, "SelectWithPolicy"));
  const EntropyStats used = EntropyForPolicy(
      pending_entropy_, held_share_, step, options_.share_hold_steps);
  ENTROGRAD_ASSIGN_OR_RETURN(KeepDecision decision,
                             DecideKeepCount(used, numel_, step, options_));
  ENTROGRAD_RETURN_IF_ERROR(SelectWithDecision(decision, step, stream, out));
  held_share_ =
      HeldShareAfter(used, held_share_, step, options_.share_hold_steps);
  return absl::OkStatus();
}

absl::Status DeviceLayerCompressor::SelectWithDecision(
    const KeepDecision& decision, int64_t step, cudaStream_t stream,
    DeviceCompressedLayer* out) {
  if (decision.dense) {
    ENTROGRAD_RETURN_IF_ERROR(CheckAccumulatedFinite(stream));
    return CommitDense(step, decision.keep_ratio, stream, out);
  }
  if (decision.k < 0) return SelectThresholdAndCommit(step, stream, out);
  return SelectAndCommit(decision.k, step, decision.keep_ratio, stream, out);
}

absl::Status DeviceLayerCompressor::RestoreHeldShare(const HeldShare& held) {
  ENTROGRAD_RETURN_IF_ERROR(ValidateHeldShare(held));
  held_share_ = held;
  return absl::OkStatus();
}

absl::Status DeviceLayerCompressor::SelectTopK(int64_t k, int64_t step,
                                               double keep_ratio,
                                               cudaStream_t stream,
                                               DeviceCompressedLayer* out) {
  ENTROGRAD_RETURN_IF_ERROR(CheckPending(pending_, "SelectTopK"));
  ENTROGRAD_RETURN_IF_ERROR(CheckKeepCount(k, numel_));
  ENTROGRAD_RETURN_IF_ERROR(CheckWholeLayerKeepCount(sent_whole_, k, numel_));
  if (k == numel_) {
    ENTROGRAD_RETURN_IF_ERROR(CheckAccumulatedFinite(stream));
    return CommitDense(step, 1.0, stream, out);
  }
  return SelectAndCommit(k, step, keep_ratio, stream, out);
}

absl::Status DeviceLayerCompressor::CheckAccumulatedFinite(
    cudaStream_t stream) const {
  if (pending_first_bad_accumulated_ == kNoElement) return absl::OkStatus();
  ScopedDevice on_device(device_);
  ENTROGRAD_ASSIGN_OR_RETURN(
      float value, ReadElement(pending_accumulated_, GradientType::kFloat32,
                               pending_first_bad_accumulated_, stream));
  return NonFiniteElementError(kAccumulatedName, value,
                               pending_first_bad_accumulated_);
}

void DeviceLayerCompressor::FillHeader(int64_t step, double keep_ratio,
                                       DeviceCompressedLayer* out) const {
  out->step = step;
  out->numel = numel_;
  out->entropy = pending_entropy_;
  out->keep_ratio = keep_ratio;
  out->dense = false;
  out->indices = out_indices_;
  out->values = out_values_;
}

void DeviceLayerCompressor::SwapInPending() {
  // A (with the selected entries zeroed) becomes G, V' becomes V.
  std::swap(residual_, pending_accumulated_);
  std::swap(velocity_, pending_velocity_);
  pending_ = false;
}

absl::Status DeviceLayerCompressor::SelectAndCommit(
    int64_t k, int64_t step, double keep_ratio, cudaStream_t stream,
    DeviceCompressedLayer* out) {
  ENTROGRAD_RETURN_IF_ERROR(CheckAccumulatedFinite(stream));
  ScopedDevice on_device(device_);
  if (k > 0) {
    DeviceWorkspace& workspace = *workspace_;
    internal::SelectLaunch launch;
    launch.accumulated = pending_accumulated_;
    launch.next_velocity = pending_velocity_;
    launch.n = numel_;
    launch.k = k;
    launch.first_digit_histogram = first_digit_histogram_;
    launch.digit_histograms = workspace.digit_histograms_;
    launch.candidates = workspace.candidates_;
    launch.block_counts = workspace.block_counts_;
    launch.state = static_cast<internal::SelectState*>(workspace.select_state_);
    launch.cub_temp = workspace.cub_temp_;
    launch.cub_temp_bytes = workspace.cub_temp_bytes_;
    launch.refine_blocks = refine_blocks_;
    launch.out_indices = out_indices_;
    launch.out_values = out_values_;
    if (const cudaError_t error = internal::LaunchSelectTopK(launch, stream);
        error != cudaSuccess) {
      // A may be partly masked: the accumulation cannot be selected again.
      pending_ = false;
      return CudaErrorStatus(error, "the top-k selection kernels");
    }
  }
  FillHeader(step, keep_ratio, out);
  out->k = k;
  SwapInPending();
  return absl::OkStatus();
}

absl::Status DeviceLayerCompressor::SelectThresholdAndCommit(
    int64_t step, cudaStream_t stream, DeviceCompressedLayer* out) {
  ENTROGRAD_RETURN_IF_ERROR(CheckAccumulatedFinite(stream));
  ScopedDevice on_device(device_);
  DeviceWorkspace& workspace = *workspace_;
  auto* state = static_cast<internal::SelectState*>(workspace.select_state_);
  ENTROGRAD_CUDA_RETURN_IF_ERROR(internal::LaunchSelectAtLeast(
      pending_accumulated_, numel_,
      MagnitudeKey(static_cast<float>(options_.threshold)), out_indices_,
      &state->candidate_count, workspace.cub_temp_, workspace.cub_temp_bytes_,
      stream));
  // k is only known now: the one wait of a threshold step.
  int64_t k = 0;
  ENTROGRAD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
      &k, &state->candidate_count, sizeof(k), cudaMemcpyDeviceToHost, stream));
  ENTROGRAD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  ENTROGRAD_CUDA_RETURN_IF_ERROR(
      internal::LaunchGatherAndMask(pending_accumulated_, pending_velocity_,
                                    out_indices_, k, out_values_, stream));
  FillHeader(step, static_cast<double>(k) / static_cast<double>(numel_), out);
  out->k = k;
  SwapInPending();
  return absl::OkStatus();
}

absl::Status DeviceLayerCompressor::CommitDense(int64_t step, double keep_ratio,
                                                cudaStream_t stream,
                                                DeviceCompressedLayer* out) {
  // Everything is sent: the values are A, and G and V become zero (5.6 with
  // every entry selected). A layer sent whole never left them anything else.
  ScopedDevice on_device(device_);
  const size_t bytes = static_cast<size_t>(numel_) * sizeof(float);
  ENTROGRAD_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(out_values_, pending_accumulated_, bytes,
                      cudaMemcpyDeviceToDevice, stream));
  if (!sent_whole_) {
    // Zeroing in the spare buffers and swapping them in keeps G and V as
    // they were if either memset fails.
    ENTROGRAD_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(pending_accumulated_, 0, bytes, stream));
    if (velocity_ != nullptr) {
      ENTROGRAD_CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(pending_velocity_, 0, bytes, stream));
    }
    std::swap(residual_, pending_accumulated_);
    std::swap(velocity_, pending_velocity_);
  }
  FillHeader(step, keep_ratio, out);
  out->k = numel_;
  out->dense = true;
  out->indices = nullptr;
  pending_ = false;
  return absl::OkStatus();
}

absl::Status DeviceLayerCompressor::CopyStateToHost(
    std::vector<float>* residual, std::vector<float>* velocity,
    cudaStream_t stream) const {
  ScopedDevice on_device(device_);
  const size_t bytes = static_cast<size_t>(numel_) * sizeof(float);
  residual->resize(static_cast<size_t>(numel_));
  ENTROGRAD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
      residual->data(), residual_, bytes, cudaMemcpyDeviceToHost, stream));
  velocity->resize(velocity_ != nullptr ? static_cast<size_t>(numel_) : 0);
  if (velocity_ != nullptr) {
    ENTROGRAD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
        velocity->data(), velocity_, bytes, cudaMemcpyDeviceToHost, stream));
  }
  ENTROGRAD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return absl::OkStatus();
}

absl::Status DeviceLayerCompressor::RestoreState(
    absl::Span<const float> residual, absl::Span<const float> velocity,
    cudaStream_t stream) {
  if (static_cast<int64_t>(residual.size()) != numel_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "residual has ", residual.size(), " elements; expected ", numel_));
  }
  const bool momentum = options_.momentum_correction;
  const size_t expected_velocity = momentum ? static_cast<size_t>(numel_) : 0;
  if (velocity.size() != expected_velocity) {
    return absl::InvalidArgumentError(absl::StrCat(
        "velocity has ", velocity.size(), " elements; expected ",
        expected_velocity, momentum ? "" : " (no momentum correction)"));
  }
  for (size_t i = 0; i < residual.size(); ++i) {
    if (!std::isfinite(residual[i])) {
      return NonFiniteElementError("residual", residual[i], i);
    }
  }
  for (size_t i = 0; i < velocity.size(); ++i) {
    if (!std::isfinite(velocity[i])) {
      return NonFiniteElementError("velocity", velocity[i], i);
    }
  }
  if (sent_whole_) {
    // Its G and V keep their +0.0 (a -0.0 is zero too), as on the CPU.
    ENTROGRAD_RETURN_IF_ERROR(CheckWholeLayerStateIsZero("residual", residual));
    ENTROGRAD_RETURN_IF_ERROR(CheckWholeLayerStateIsZero("velocity", velocity));
    pending_ = false;
    return absl::OkStatus();
  }
  ScopedDevice on_device(device_);
  const size_t bytes = static_cast<size_t>(numel_) * sizeof(float);
  ENTROGRAD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
      residual_, residual.data(), bytes, cudaMemcpyHostToDevice, stream));
  if (momentum) {
    ENTROGRAD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
        velocity_, velocity.data(), bytes, cudaMemcpyHostToDevice, stream));
  }
  ENTROGRAD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  pending_ = false;
  return absl::OkStatus();
}

absl::Status CopyToHost(const DeviceCompressedLayer& layer, cudaStream_t stream,
                        CompressedLayer* out) {
  out->step = layer.step;
  out->numel = layer.numel;
  out->k = layer.k;
  out->entropy = layer.entropy;
  out->keep_ratio = layer.keep_ratio;
  out->dense = layer.dense;
  const size_t count = static_cast<size_t>(layer.k);
  out->indices.resize(layer.dense ? 0 : count);
  out->values.resize(count);
  if (count > 0 && !layer.dense) {
    ENTROGRAD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
        out->indices.data(), layer.indices, count * sizeof(uint32_t),
        cudaMemcpyDeviceToHost, stream));
  }
  if (count > 0) {
    ENTROGRAD_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(out->values.data(), layer.values, count * sizeof(float),
                        cudaMemcpyDeviceToHost, stream));
  }
  ENTROGRAD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return absl::OkStatus();
}

}  // namespace cuda
}  // namespace entrograd
