// CUDA runtime errors as absl::Status, and a guard that makes a device
// current for the length of a call. Private to the CUDA path.
#ifndef ENTROGRAD_CUDA_CUDA_STATUS_H_
#define ENTROGRAD_CUDA_CUDA_STATUS_H_

#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace entrograd {
namespace cuda {

// RESOURCE_EXHAUSTED for an allocation failure, INTERNAL otherwise; the
// message names the call that failed and CUDA's own words.
inline absl::Status CudaErrorStatus(cudaError_t error, absl::string_view what) {
  const std::string message =
      absl::StrCat(what, " failed: ", cudaGetErrorName(error), " (",
                   cudaGetErrorString(error), ")");
  if (error == cudaErrorMemoryAllocation) {
    return absl::ResourceExhaustedError(message);
  }
  return absl::InternalError(message);
}

// Makes `device` current and restores the caller's device afterwards, so
// that a call never leaves the caller on another device.
class ScopedDevice {
 public:
  explicit ScopedDevice(int device) {
    if (cudaGetDevice(&previous_) == cudaSuccess && previous_ != device) {
      changed_ = cudaSetDevice(device) == cudaSuccess;
    }
  }
  ~ScopedDevice() {
    if (changed_) cudaSetDevice(previous_);
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

}  // namespace cuda
}  // namespace entrograd

// Returns the CUDA error of `expr` as a Status from the enclosing function.
#define ENTROGRAD_CUDA_RETURN_IF_ERROR(expr)                                   \
  do {                                                                         \
    const cudaError_t entrograd_cuda_error_ = (expr);                          \
    if (entrograd_cuda_error_ != cudaSuccess) {                                \
      return ::entrograd::cuda::CudaErrorStatus(entrograd_cuda_error_, #expr); \
    }                                                                          \
  } while (false)

#endif  // ENTROGRAD_CUDA_CUDA_STATUS_H_
