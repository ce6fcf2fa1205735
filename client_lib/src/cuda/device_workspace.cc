// DeviceWorkspace: the scratch of the CUDA selection, allocated once.
#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "entrograd/common/status_macros.h"
#include "core/interval_sums.h"
#include "cuda/cuda_status.h"
#include "cuda/device_layout.h"
#include "cuda/kernels.h"
#include "entrograd/cuda/device_compressor.h"

namespace entrograd {
namespace cuda {

absl::Status CheckCudaDeviceAvailable() {
  int driver_version = 0;
  cudaError_t error = cudaDriverGetVersion(&driver_version);
  if (error != cudaSuccess || driver_version == 0) {
    return absl::UnavailableError(
        "no CUDA driver is installed (libcuda.so.1 could not be loaded)");
  }
  // A driver of the same major version runs this build (CUDA's minor
  // version compatibility); an older major version cannot.
  int runtime_version = 0;
  cudaRuntimeGetVersion(&runtime_version);
  if (driver_version / 1000 < runtime_version / 1000) {
    return absl::UnavailableError(
        absl::StrCat("the CUDA driver supports CUDA ", driver_version / 1000,
                     ".", driver_version % 1000 / 10, " but this build needs ",
                     runtime_version / 1000, ".x"));
  }
  int devices = 0;
  error = cudaGetDeviceCount(&devices);
  if (error != cudaSuccess) {
    return absl::UnavailableError(
        absl::StrCat("no usable CUDA device: ", cudaGetErrorString(error)));
  }
  if (devices == 0) return absl::UnavailableError("no CUDA device is present");
  return absl::OkStatus();
}

int GradientTypeSize(GradientType type) {
  return type == GradientType::kFloat32 ? 4 : 2;
}

absl::StatusOr<std::shared_ptr<DeviceWorkspace>> DeviceWorkspace::Create(
    int64_t max_numel, int64_t max_intervals) {
  if (max_numel < 1 || static_cast<uint64_t>(max_numel) > kMaxLayerElements) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_numel = ", max_numel,
                     "; expected 1 <= max_numel <= ", kMaxLayerElements));
  }
  if (max_intervals < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_intervals = ", max_intervals, "; expected >= 1"));
  }
  ENTROGRAD_RETURN_IF_ERROR(CheckCudaDeviceAvailable());
  int device = 0;
  ENTROGRAD_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  std::shared_ptr<DeviceWorkspace> workspace(
      new DeviceWorkspace(max_numel, max_intervals, device));
  ENTROGRAD_RETURN_IF_ERROR(workspace->Allocate());
  return workspace;
}

absl::Status DeviceWorkspace::Allocate() {
  using internal::kCompactBlocks;
  const int64_t m = std::min(max_intervals_, max_numel_);
  ENTROGRAD_CUDA_RETURN_IF_ERROR(
      internal::SelectTempBytes(max_numel_, &cub_temp_bytes_));
  DeviceLayout layout;
  // The partial sums, then the m interval sums right after them.
  layout.Add(
      &interval_partials_,
      static_cast<size_t>(internal::MaxIntervalPartials(max_numel_, m) + m));
  layout.Add(&candidates_, static_cast<size_t>(max_numel_));
  layout.Add(&digit_histograms_,
             internal::kSecondDigitBins + internal::kThirdDigitBins);
  layout.Add(&block_counts_, 4 * kCompactBlocks);
  layout.AddBytes(&select_state_, sizeof(internal::SelectState));
  layout.AddBytes(&cub_temp_, cub_temp_bytes_);
  ENTROGRAD_RETURN_IF_ERROR(layout.Allocate(&memory_));
  return absl::OkStatus();
}

absl::Status DeviceWorkspace::CheckLastSelection(int64_t k,
                                                 cudaStream_t stream) const {
  ScopedDevice on_device(device_);
  internal::SelectState state;
  ENTROGRAD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
      &state, select_state_, sizeof(state), cudaMemcpyDeviceToHost, stream));
  ENTROGRAD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  if (state.error != 0 || state.candidate_count < k || state.remaining < 1) {
    return absl::InternalError(absl::StrCat(
        "the last selection's device bookkeeping is inconsistent: k = ", k,
        ", candidates = ", state.candidate_count, ", threshold key = ",
        state.prefix, ", equal entries taken = ", state.remaining,
        ", error = ", state.error));
  }
  return absl::OkStatus();
}

DeviceWorkspace::~DeviceWorkspace() {
  if (memory_ != nullptr) {
    ScopedDevice on_device(device_);
    cudaFree(memory_);
  }
}

}  // namespace cuda
}  // namespace entrograd
