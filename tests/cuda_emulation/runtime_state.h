// What the emulated kernel launches and CUB calls share with the CUDA
// runtime shim (runtime_shim.cc): the last-error slot and the live streams.
#ifndef ENTROGRAD_TESTS_CUDA_EMULATION_RUNTIME_STATE_H_
#define ENTROGRAD_TESTS_CUDA_EMULATION_RUNTIME_STATE_H_

#include <cuda_runtime_api.h>

namespace entrograd::cuda_emulation {

// Keeps `error` (unless cudaSuccess) for this host thread's next
// cudaGetLastError, as every CUDA runtime call does, and returns it.
cudaError_t RecordError(cudaError_t error);

// True for the legacy and per-thread default streams and for every stream
// created and not yet destroyed.
bool IsLiveStream(cudaStream_t stream);

}  // namespace entrograd::cuda_emulation

#endif  // ENTROGRAD_TESTS_CUDA_EMULATION_RUNTIME_STATE_H_
