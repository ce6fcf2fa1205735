// The CUDA runtime's memory functions on the emulator: "device" memory is
// host memory, and every copy and memset is done at the call (a stream is
// always idle). What a GPU would refuse is refused here too, and more:
// copies and memsets must stay inside one device allocation, and fresh
// allocations hold a pattern instead of zeros (CUDA does not clear them),
// so code that relies on either shows.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>

#include "cuda_emulation/runtime_state.h"

namespace entrograd::cuda_emulation {
namespace {

// What cudaMemGetInfo reports as the device's memory, and the most that
// cudaMalloc hands out: modest, so that tests sized for a large GPU skip.
constexpr size_t kDeviceBytes = size_t{4} << 30;
// cudaMalloc's alignment guarantee.
constexpr size_t kAlignment = 256;
constexpr int kFreshMemoryByte = 0xA5;

struct Allocation {
  size_t bytes;
  bool pinned_host;  // cudaMallocHost, not device memory
};

struct Memory {
  std::mutex mutex;
  std::map<uintptr_t, Allocation> allocations;  // by start address
  size_t device_bytes_in_use = 0;
};

Memory& State() {
  static Memory* const memory = new Memory;
  return *memory;
}

cudaError_t Allocate(void** pointer, size_t bytes, bool pinned_host) {
  if (pointer == nullptr) return RecordError(cudaErrorInvalidValue);
  if (bytes == 0) {  // CUDA gives no pointer and no error
    *pointer = nullptr;
    return cudaSuccess;
  }
  Memory& memory = State();
  std::lock_guard<std::mutex> lock(memory.mutex);
  if (!pinned_host && bytes > kDeviceBytes - memory.device_bytes_in_use) {
    return RecordError(cudaErrorMemoryAllocation);
  }
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* block = std::aligned_alloc(kAlignment, rounded);
  if (block == nullptr) return RecordError(cudaErrorMemoryAllocation);
  std::memset(block, kFreshMemoryByte, rounded);
  memory.allocations[reinterpret_cast<uintptr_t>(block)] = {bytes, pinned_host};
  if (!pinned_host) memory.device_bytes_in_use += bytes;
  *pointer = block;
  return cudaSuccess;
}

cudaError_t Release(void* pointer, bool pinned_host) {
  if (pointer == nullptr) return cudaSuccess;
  Memory& memory = State();
  std::lock_guard<std::mutex> lock(memory.mutex);
  const auto it = memory.allocations.find(reinterpret_cast<uintptr_t>(pointer));
  if (it == memory.allocations.end() || it->second.pinned_host != pinned_host) {
    return RecordError(cudaErrorInvalidValue);
  }
  if (!pinned_host) memory.device_bytes_in_use -= it->second.bytes;
  memory.allocations.erase(it);
  std::free(pointer);
  return cudaSuccess;
}

// True when [pointer, pointer + bytes) lies inside one device allocation.
bool InDeviceAllocation(const void* pointer, size_t bytes) {
  const auto address = reinterpret_cast<uintptr_t>(pointer);
  Memory& memory = State();
  std::lock_guard<std::mutex> lock(memory.mutex);
  auto it = memory.allocations.upper_bound(address);
  if (it == memory.allocations.begin()) return false;
  it = std::prev(it);
  return !it->second.pinned_host && address - it->first <= it->second.bytes &&
         bytes <= it->second.bytes - (address - it->first);
}

bool IsDevicePointer(const void* pointer) {
  return InDeviceAllocation(pointer, 0);
}

// Checks the device side(s) of a copy of `count` bytes.
cudaError_t CheckCopy(void* dst, const void* src, size_t count,
                      cudaMemcpyKind kind) {
  const bool device_dst = kind == cudaMemcpyHostToDevice ||
                          kind == cudaMemcpyDeviceToDevice ||
                          (kind == cudaMemcpyDefault && IsDevicePointer(dst));
  const bool device_src = kind == cudaMemcpyDeviceToHost ||
                          kind == cudaMemcpyDeviceToDevice ||
                          (kind == cudaMemcpyDefault && IsDevicePointer(src));
  if (kind != cudaMemcpyHostToHost && kind != cudaMemcpyHostToDevice &&
      kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice &&
      kind != cudaMemcpyDefault) {
    return cudaErrorInvalidMemcpyDirection;
  }
  if (count == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return cudaErrorInvalidValue;
  if ((device_dst && !InDeviceAllocation(dst, count)) ||
      (device_src && !InDeviceAllocation(src, count))) {
    return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

cudaError_t Copy(void* dst, const void* src, size_t count,
                 cudaMemcpyKind kind) {
  if (const cudaError_t error = CheckCopy(dst, src, count, kind);
      error != cudaSuccess) {
    return RecordError(error);
  }
  if (count != 0) std::memmove(dst, src, count);
  return cudaSuccess;
}

cudaError_t Set(void* dst, int value, size_t count) {
  if (count == 0) return cudaSuccess;
  if (!InDeviceAllocation(dst, count))
    return RecordError(cudaErrorInvalidValue);
  std::memset(dst, value, count);
  return cudaSuccess;
}

}  // namespace
}  // namespace entrograd::cuda_emulation

namespace emu = ::entrograd::cuda_emulation;

extern "C" {

cudaError_t CUDARTAPI cudaMalloc(void** devPtr, size_t size) {
  return emu::Allocate(devPtr, size, /*pinned_host=*/false);
}

cudaError_t CUDARTAPI cudaFree(void* devPtr) {
  return emu::Release(devPtr, /*pinned_host=*/false);
}

cudaError_t CUDARTAPI cudaMallocHost(void** ptr, size_t size) {
  return emu::Allocate(ptr, size, /*pinned_host=*/true);
}

cudaError_t CUDARTAPI cudaFreeHost(void* ptr) {
  return emu::Release(ptr, /*pinned_host=*/true);
}

cudaError_t CUDARTAPI cudaMemGetInfo(size_t* free, size_t* total) {
  if (free == nullptr || total == nullptr) {
    return emu::RecordError(cudaErrorInvalidValue);
  }
  emu::Memory& memory = emu::State();
  std::lock_guard<std::mutex> lock(memory.mutex);
  *total = emu::kDeviceBytes;
  *free = emu::kDeviceBytes - memory.device_bytes_in_use;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaMemset(void* devPtr, int value, size_t count) {
  return emu::Set(devPtr, value, count);
}

cudaError_t CUDARTAPI cudaMemsetAsync(void* devPtr, int value, size_t count,
                                      cudaStream_t stream) {
  if (!emu::IsLiveStream(stream)) {
    return emu::RecordError(cudaErrorInvalidResourceHandle);
  }
  return emu::Set(devPtr, value, count);
}

cudaError_t CUDARTAPI cudaMemcpy(void* dst, const void* src, size_t count,
                                 cudaMemcpyKind kind) {
  return emu::Copy(dst, src, count, kind);
}

cudaError_t CUDARTAPI cudaMemcpyAsync(void* dst, const void* src, size_t count,
                                      cudaMemcpyKind kind,
                                      cudaStream_t stream) {
  if (!emu::IsLiveStream(stream)) {
    return emu::RecordError(cudaErrorInvalidResourceHandle);
  }
  return emu::Copy(dst, src, count, kind);
}

}  // extern "C"
