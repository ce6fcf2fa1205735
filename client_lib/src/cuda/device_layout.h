// One cudaMalloc carved into aligned buffers: the CUDA path allocates each
// compressor's and each workspace's device memory once, at creation, and
// never per call. Private to the CUDA path.
#ifndef ENTROGRAD_CUDA_DEVICE_LAYOUT_H_
#define ENTROGRAD_CUDA_DEVICE_LAYOUT_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "cuda/cuda_status.h"

namespace entrograd {
namespace cuda {

class DeviceLayout {
 public:
  // Asks for `count` elements of T at *pointer (set by Allocate).
  template <typename T>
  void Add(T** pointer, size_t count) {
    AddBytes(reinterpret_cast<void**>(pointer), count * sizeof(T));
  }
  void AddBytes(void** pointer, size_t bytes) {
    parts_.push_back(Part{pointer, AlignUp(bytes)});
  }

  // One cudaMalloc for every part asked for; *memory receives the block the
  // caller frees with cudaFree. Errors: RESOURCE_EXHAUSTED when the device
  // memory runs out, INTERNAL for other CUDA errors; no pointer set then.
  absl::Status Allocate(void** memory) const {
    size_t total = 0;
    for (const Part& part : parts_) total += part.bytes;
    ENTROGRAD_CUDA_RETURN_IF_ERROR(cudaMalloc(memory, total));
    char* next = static_cast<char*>(*memory);
    for (const Part& part : parts_) {
      *part.pointer = next;
      next += part.bytes;
    }
    return absl::OkStatus();
  }

 private:
  // What cudaMalloc itself guarantees: enough for any vector load.
  static constexpr size_t kAlignment = 256;
  static size_t AlignUp(size_t bytes) {
    return (bytes + kAlignment - 1) / kAlignment * kAlignment;
  }
  struct Part {
    void** pointer;
    size_t bytes;
  };
  std::vector<Part> parts_;
};

}  // namespace cuda
}  // namespace entrograd

#endif  // ENTROGRAD_CUDA_DEVICE_LAYOUT_H_
