// The emulator's driver_types.h: the runtime API's types and constants that
// entrograd and the emulator use, nothing more. Enumerators keep CUDA's
// numbers, so that an error printed as a number reads the same as on a GPU.
#ifndef ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_DRIVER_TYPES_H_
#define ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_DRIVER_TYPES_H_

#include <cstddef>

#include "vector_types.h"

enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchFailure = 719,
  cudaErrorUnknown = 999,
};
typedef enum cudaError cudaError_t;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrMultiProcessorCount = 16,
};

// A stream is an opaque handle; the two special ones are small integers.
typedef struct CUstream_st* cudaStream_t;
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)

// The fields of cudaDeviceProp that the emulator fills in.
struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  int warpSize;
  int maxThreadsPerBlock;
  int major;
  int minor;
  int multiProcessorCount;
};

// Launch attributes are not emulated: attrs must be null (numAttrs 0).
struct cudaLaunchAttribute;
struct cudaLaunchConfig_t {
  dim3 gridDim;
  dim3 blockDim;
  size_t dynamicSmemBytes;
  cudaStream_t stream;
  cudaLaunchAttribute* attrs;
  unsigned int numAttrs;
};

#endif  // ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_DRIVER_TYPES_H_
