// The emulator's cuda_runtime.h, first on the include path of every target
// that links entrograd_cuda_emulator: what CUDA code compiled as C++ gets
// from CUDA's header. The runtime API (cuda_runtime_api.h), the device
// builtins (__shared__, __syncthreads, shuffles, atomics, threadIdx...),
// and cudaLaunchKernelEx, which runs the kernel on the emulator: the
// kernels' sources use CUDA's own names and never know which build they
// are in.
#ifndef ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_CUDA_RUNTIME_H_
#define ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_CUDA_RUNTIME_H_

#include <utility>

#include "cuda_emulation/device_builtins.h"
#include "cuda_emulation/kernel_launch.h"
#include "cuda_emulation/runtime_state.h"
#include "cuda_runtime_api.h"

// CUDA 12's launch with a configuration, with its signature: the arguments
// are converted to the kernel's parameter types. The whole grid runs before
// it returns (kernel_launch.h). Dynamic shared memory and launch attributes
// are not emulated: asking for them is cudaErrorInvalidValue.
template <typename... ExpTypes, typename... ActTypes>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t* config,
                               void (*kernel)(ExpTypes...),
                               ActTypes&&... args) {
  namespace emu = ::entrograd::cuda_emulation;
  if (config == nullptr || config->dynamicSmemBytes != 0 ||
      config->numAttrs != 0) {
    return emu::RecordError(cudaErrorInvalidValue);
  }
  return emu::Launch(kernel, config->gridDim, config->blockDim, config->stream,
                     std::forward<ActTypes>(args)...);
}

#endif  // ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_CUDA_RUNTIME_H_
