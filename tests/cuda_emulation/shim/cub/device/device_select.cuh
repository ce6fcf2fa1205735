// cub::DeviceSelect::If on the emulator: CUB's two-call protocol (a null
// temp pointer asks for the scratch size) and a stable sequential select,
// run at the call. The scratch it is given is checked for size and filled
// with a pattern, as the real pass would overwrite it, so that scratch
// overlapping live data shows.
#ifndef ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_CUB_DEVICE_DEVICE_SELECT_CUH_
#define ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_CUB_DEVICE_DEVICE_SELECT_CUH_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cuda_emulation/runtime_state.h"

namespace entrograd::cuda_emulation {

// Scratch bytes the emulated select asks for: like CUB's, it grows with
// the item count (one tile descriptor per 4096 items), so that scratch
// sized for too few items is refused as on a GPU.
inline size_t SelectTempBytes(int64_t num_items) {
  const uint64_t items = num_items > 0 ? static_cast<uint64_t>(num_items) : 0;
  return 256 + 16 * ((items + 4095) / 4096);
}

}  // namespace entrograd::cuda_emulation

namespace cub {

struct DeviceSelect {
  // Errors (also kept for cudaGetLastError): cudaErrorInvalidValue when the
  // scratch is smaller than the size query said, as in CUB;
  // cudaErrorInvalidResourceHandle for a destroyed stream.
  template <typename InputIteratorT, typename OutputIteratorT,
            typename NumSelectedIteratorT, typename SelectOp>
  static cudaError_t If(void* d_temp_storage, size_t& temp_storage_bytes,
                        InputIteratorT d_in, OutputIteratorT d_out,
                        NumSelectedIteratorT d_num_selected_out,
                        int64_t num_items, SelectOp select_op,
                        cudaStream_t stream = 0) {
    namespace emu = ::entrograd::cuda_emulation;
    const size_t required = emu::SelectTempBytes(num_items);
    if (d_temp_storage == nullptr) {
      temp_storage_bytes = required;
      return cudaSuccess;
    }
    if (temp_storage_bytes < required) {
      return emu::RecordError(cudaErrorInvalidValue);
    }
    if (!emu::IsLiveStream(stream)) {
      return emu::RecordError(cudaErrorInvalidResourceHandle);
    }
    std::memset(d_temp_storage, 0xA5, required);
    int64_t selected = 0;
    for (int64_t i = 0; i < num_items; ++i) {
      const auto item = d_in[i];
      if (select_op(item)) d_out[selected++] = item;
    }
    *d_num_selected_out = selected;
    return cudaSuccess;
  }
};

}  // namespace cub

#endif  // ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_CUB_DEVICE_DEVICE_SELECT_CUH_
