// The one place where the two builds of the kernels differ. nvcc builds
// them for the GPU (entrograd_cuda); CI, which has no GPU, builds the same
// files as C++ against the CPU emulator in tests/cuda_emulation
// (entrograd_cuda_emulated, ENTROGRAD_CUDA_EMULATION defined) and runs the
// parity tests on them. So the kernel files include this header instead of
// CUB and Thrust, and launch every kernel with LaunchKernel instead of
// <<<...>>>, which C++ cannot parse; CUB and Thrust come through
// cub_compat.cuh. Private to the CUDA path.
#ifndef ENTROGRAD_CUDA_CUDA_COMPAT_CUH_
#define ENTROGRAD_CUDA_CUDA_COMPAT_CUH_

#ifdef ENTROGRAD_CUDA_EMULATION
#include "cuda_emulation/cuda_emulation.h"
#else
#include <cuda_runtime.h>
#endif

#include <utility>

namespace entrograd {
namespace cuda {
namespace internal {

// kernel<<<grid, block, 0, stream>>>(args...), returning the launch error.
// The error is also taken out of cudaGetLastError, as the launchers did
// after each <<<...>>>, so that it is reported once, here. On the GPU this
// is cudaLaunchKernelEx (CUDA 12+), which converts the arguments to the
// kernel's parameter types as <<<...>>> does; on the emulator the kernel
// runs to the end before this returns.
template <typename... Params, typename... Args>
cudaError_t LaunchKernel(void (*kernel)(Params...), dim3 grid, dim3 block,
                         cudaStream_t stream, Args&&... args) {
#ifdef ENTROGRAD_CUDA_EMULATION
  const cudaError_t launch = ::entrograd::cuda_emulation::Launch(
      kernel, grid, block, stream, std::forward<Args>(args)...);
#else
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = 0;
  config.stream = stream;
  const cudaError_t launch =
      cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
#endif
  const cudaError_t last = cudaGetLastError();
  return launch != cudaSuccess ? launch : last;
}

}  // namespace internal
}  // namespace cuda
}  // namespace entrograd

#endif  // ENTROGRAD_CUDA_CUDA_COMPAT_CUH_
