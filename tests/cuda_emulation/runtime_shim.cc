// The rest of the CUDA runtime API that entrograd and its tests call, on
// the emulator: one device (named "entrograd CPU emulation"), a driver as
// new as the runtime, streams that are handles only (work is done at the
// call, so synchronising is a no-op), and CUDA's last-error rules.
#include <cuda_runtime_api.h>

#include <cstring>
#include <mutex>
#include <set>

#include "cuda_emulation/runtime_state.h"

namespace entrograd::cuda_emulation {
namespace {

constexpr int kMultiprocessors = 4;

thread_local cudaError_t last_error = cudaSuccess;
thread_local int current_device = 0;

struct Streams {
  std::mutex mutex;
  std::set<cudaStream_t> live;
};

Streams& StreamState() {
  static Streams* const streams = new Streams;
  return *streams;
}

// A distinct, never dereferenced address per stream.
struct StreamToken {
  char unused;
};

}  // namespace

cudaError_t RecordError(cudaError_t error) {
  if (error != cudaSuccess) last_error = error;
  return error;
}

bool IsLiveStream(cudaStream_t stream) {
  if (stream == nullptr || stream == cudaStreamLegacy ||
      stream == cudaStreamPerThread) {
    return true;
  }
  Streams& streams = StreamState();
  std::lock_guard<std::mutex> lock(streams.mutex);
  return streams.live.count(stream) != 0;
}

}  // namespace entrograd::cuda_emulation

namespace emu = ::entrograd::cuda_emulation;

extern "C" {

cudaError_t CUDARTAPI cudaGetLastError(void) {
  const cudaError_t error = emu::last_error;
  emu::last_error = cudaSuccess;
  return error;
}

cudaError_t CUDARTAPI cudaPeekAtLastError(void) { return emu::last_error; }

const char* CUDARTAPI cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidMemcpyDirection:
      return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorLaunchFailure:
      return "cudaErrorLaunchFailure";
    default:
      return "cudaErrorUnknown";
  }
}

const char* CUDARTAPI cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidMemcpyDirection:
      return "invalid copy direction for memcpy";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure (the emulator printed why)";
    default:
      return "unrecognized error code";
  }
}

cudaError_t CUDARTAPI cudaDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return emu::RecordError(cudaErrorInvalidValue);
  *driverVersion = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaRuntimeGetVersion(int* runtimeVersion) {
  if (runtimeVersion == nullptr) {
    return emu::RecordError(cudaErrorInvalidValue);
  }
  *runtimeVersion = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGetDeviceCount(int* count) {
  if (count == nullptr) return emu::RecordError(cudaErrorInvalidValue);
  *count = 1;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGetDevice(int* device) {
  if (device == nullptr) return emu::RecordError(cudaErrorInvalidValue);
  *device = emu::current_device;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaSetDevice(int device) {
  if (device != 0) return emu::RecordError(cudaErrorInvalidDevice);
  emu::current_device = device;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr,
                                             int device) {
  if (value == nullptr) return emu::RecordError(cudaErrorInvalidValue);
  if (device != 0) return emu::RecordError(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrMultiProcessorCount:
      *value = emu::kMultiprocessors;
      return cudaSuccess;
    case cudaDevAttrMaxThreadsPerBlock:
      *value = 1024;
      return cudaSuccess;
    case cudaDevAttrWarpSize:
      *value = 32;
      return cudaSuccess;
    default:
      return emu::RecordError(cudaErrorInvalidValue);
  }
}

cudaError_t CUDARTAPI cudaGetDeviceProperties(cudaDeviceProp* prop,
                                              int device) {
  if (prop == nullptr) return emu::RecordError(cudaErrorInvalidValue);
  if (device != 0) return emu::RecordError(cudaErrorInvalidDevice);
  std::memset(prop, 0, sizeof(*prop));
  std::strncpy(prop->name, "entrograd CPU emulation", sizeof(prop->name) - 1);
  size_t free_bytes = 0;
  cudaMemGetInfo(&free_bytes, &prop->totalGlobalMem);
  prop->multiProcessorCount = emu::kMultiprocessors;
  prop->maxThreadsPerBlock = 1024;
  prop->warpSize = 32;
  prop->major = 9;
  prop->minor = 0;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaDeviceSynchronize(void) { return cudaSuccess; }

cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t* pStream) {
  return cudaStreamCreateWithFlags(pStream, cudaStreamDefault);
}

cudaError_t CUDARTAPI cudaStreamCreateWithFlags(cudaStream_t* pStream,
                                                unsigned int flags) {
  if (pStream == nullptr || (flags & ~cudaStreamNonBlocking) != 0) {
    return emu::RecordError(cudaErrorInvalidValue);
  }
  *pStream = reinterpret_cast<cudaStream_t>(new emu::StreamToken);
  emu::Streams& streams = emu::StreamState();
  std::lock_guard<std::mutex> lock(streams.mutex);
  streams.live.insert(*pStream);
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream) {
  emu::Streams& streams = emu::StreamState();
  std::lock_guard<std::mutex> lock(streams.mutex);
  if (streams.live.erase(stream) == 0) {
    return emu::RecordError(cudaErrorInvalidResourceHandle);
  }
  delete reinterpret_cast<emu::StreamToken*>(stream);
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t stream) {
  if (!emu::IsLiveStream(stream)) {
    return emu::RecordError(cudaErrorInvalidResourceHandle);
  }
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaStreamQuery(cudaStream_t stream) {
  return cudaStreamSynchronize(stream);
}

}  // extern "C"
