// Launch: the emulator's kernel<<<grid, block, 0, stream>>>(args...), behind
// the shim's cudaLaunchKernelEx (shim/cuda_runtime.h). The kernel runs to
// the end before Launch returns (a stream is a queue that is always empty),
// which every stream-ordered program accepts.
#ifndef ENTROGRAD_TESTS_CUDA_EMULATION_KERNEL_LAUNCH_H_
#define ENTROGRAD_TESTS_CUDA_EMULATION_KERNEL_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <tuple>
#include <type_traits>
#include <utility>

#include "cuda_emulation/block_runner.h"
#include "cuda_emulation/runtime_state.h"

namespace entrograd::cuda_emulation {

// As cudaLaunchKernelEx: the arguments are converted to the kernel's
// parameter types once, and every thread gets its own copy of them. Errors
// (also kept for cudaGetLastError): cudaErrorInvalidResourceHandle for a
// destroyed stream, and those of RunGrid.
template <typename... Params, typename... Args>
cudaError_t Launch(void (*kernel)(Params...), dim3 grid, dim3 block,
                   cudaStream_t stream, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args),
                "a kernel launch must pass every parameter");
  if (!IsLiveStream(stream)) {
    return RecordError(cudaErrorInvalidResourceHandle);
  }
  using Arguments = std::tuple<std::decay_t<Params>...>;
  struct Closure {
    void (*kernel)(Params...);
    const Arguments* arguments;
  };
  const Arguments arguments(std::forward<Args>(args)...);
  Closure closure{kernel, &arguments};
  const ThreadBody body{[](void* context) {
                          const auto* c = static_cast<const Closure*>(context);
                          std::apply(c->kernel, *c->arguments);
                        },
                        &closure};
  return RecordError(RunGrid(grid, block, body));
}

}  // namespace entrograd::cuda_emulation

#endif  // ENTROGRAD_TESTS_CUDA_EMULATION_KERNEL_LAUNCH_H_
