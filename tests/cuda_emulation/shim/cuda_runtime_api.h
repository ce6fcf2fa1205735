// The emulator's cuda_runtime_api.h: the CUDA runtime functions entrograd,
// its tests and the emulator call, declared as CUDA declares them (extern
// "C") and defined by entrograd_cuda_emulator (runtime_shim.cc,
// memory_shim.cc), which a program links instead of libcudart. Written
// here, not taken from the CUDA toolkit, so that the emulation builds on a
// machine without one.
#ifndef ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_CUDA_RUNTIME_API_H_
#define ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_CUDA_RUNTIME_API_H_

#include <cstddef>

#include "driver_types.h"
#include "host_defines.h"
#include "vector_types.h"

// The runtime API version emulated: 12.0 brought cudaLaunchKernelEx, the
// newest call used. cudaDriverGetVersion reports the same.
#define CUDART_VERSION 12000
#define CUDARTAPI

extern "C" {

cudaError_t CUDARTAPI cudaGetLastError(void);
cudaError_t CUDARTAPI cudaPeekAtLastError(void);
const char* CUDARTAPI cudaGetErrorName(cudaError_t error);
const char* CUDARTAPI cudaGetErrorString(cudaError_t error);

cudaError_t CUDARTAPI cudaDriverGetVersion(int* driverVersion);
cudaError_t CUDARTAPI cudaRuntimeGetVersion(int* runtimeVersion);
cudaError_t CUDARTAPI cudaGetDeviceCount(int* count);
cudaError_t CUDARTAPI cudaGetDevice(int* device);
cudaError_t CUDARTAPI cudaSetDevice(int device);
cudaError_t CUDARTAPI cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr,
                                             int device);
cudaError_t CUDARTAPI cudaGetDeviceProperties(cudaDeviceProp* prop,
                                              int device);
cudaError_t CUDARTAPI cudaDeviceSynchronize(void);

cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t* pStream);
cudaError_t CUDARTAPI cudaStreamCreateWithFlags(cudaStream_t* pStream,
                                                unsigned int flags);
cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream);
cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t stream);
cudaError_t CUDARTAPI cudaStreamQuery(cudaStream_t stream);

cudaError_t CUDARTAPI cudaMalloc(void** devPtr, size_t size);
cudaError_t CUDARTAPI cudaFree(void* devPtr);
cudaError_t CUDARTAPI cudaMallocHost(void** ptr, size_t size);
cudaError_t CUDARTAPI cudaFreeHost(void* ptr);
cudaError_t CUDARTAPI cudaMemGetInfo(size_t* free, size_t* total);
cudaError_t CUDARTAPI cudaMemset(void* devPtr, int value, size_t count);
cudaError_t CUDARTAPI cudaMemsetAsync(void* devPtr, int value, size_t count,
                                      cudaStream_t stream);
cudaError_t CUDARTAPI cudaMemcpy(void* dst, const void* src, size_t count,
                                 cudaMemcpyKind kind);
cudaError_t CUDARTAPI cudaMemcpyAsync(void* dst, const void* src, size_t count,
                                      cudaMemcpyKind kind,
                                      cudaStream_t stream);

}  // extern "C"

#endif  // ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_CUDA_RUNTIME_API_H_
