// LaunchKernel: kernel<<<grid, block, 0, stream>>>(args...) in a form that
// a C++ compiler also parses. nvcc builds the kernels for the GPU
// (entrograd_cuda); CI, which has no GPU, builds the same files as C++
// against a CPU emulator of CUDA (entrograd_cuda_emulated, whose include
// path supplies its own <cuda_runtime.h>, CUB and Thrust headers). So the
// kernel files include only CUDA's own header names, and launch every
// kernel through LaunchKernel. Private to the CUDA path.
#ifndef ENTROGRAD_CUDA_CUDA_COMPAT_CUH_
#define ENTROGRAD_CUDA_CUDA_COMPAT_CUH_

#include <cuda_runtime.h>

#include <utility>

namespace entrograd {
namespace cuda {
namespace internal {

// kernel<<<grid, block, 0, stream>>>(args...), returning the launch error.
// The error is also taken out of cudaGetLastError, so that a failed launch
// is reported once, here, and not again by the next CUDA call.
// cudaLaunchKernelEx (CUDA 12+) converts the arguments to the kernel's
// parameter types as <<<...>>> does.
template <typename... Params, typename... Args>
cudaError_t LaunchKernel(void (*kernel)(Params...), dim3 grid, dim3 block,
                         cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = 0;
  config.stream = stream;
  const cudaError_t launch =
      cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
  const cudaError_t last = cudaGetLastError();
  return launch != cudaSuccess ? launch : last;
}

}  // namespace internal
}  // namespace cuda
}  // namespace entrograd

#endif  // ENTROGRAD_CUDA_CUDA_COMPAT_CUH_
