// cub::BlockScan<T, kBlockThreads> on the emulator: the ExclusiveSum
// overloads the kernels use, with and without the block aggregate. The
// items go through TempStorage and a barrier, as in CUB, and CUB's rule
// that a __syncthreads() separates two uses of one TempStorage is checked:
// breaking it fails the launch (on a GPU it is a race that may or may not
// show).
#ifndef ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_CUB_BLOCK_BLOCK_SCAN_CUH_
#define ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_CUB_BLOCK_BLOCK_SCAN_CUH_

#include <cstdint>
#include <string>

#include "cuda_emulation/block_runner.h"

namespace cub {

template <typename T, int kBlockThreads>
class BlockScan {
 public:
  // Trivial, so that a __shared__ (static) one needs no construction.
  struct TempStorage {
    T items[kBlockThreads];
    T aggregate;
    // The block and the __syncthreads() count of the last use: the check.
    uint64_t block_serial;
    uint64_t syncthreads_at_last_use;
  };

  explicit BlockScan(TempStorage& storage) : storage_(storage) {}

  void ExclusiveSum(T input, T& output) {
    T aggregate;
    ExclusiveSum(input, output, aggregate);
  }

  void ExclusiveSum(T input, T& output, T& block_aggregate) {
    namespace emu = ::entrograd::cuda_emulation;
    if (blockDim.x != kBlockThreads || blockDim.y != 1 || blockDim.z != 1) {
      emu::KernelError("cub::BlockScan for " + std::to_string(kBlockThreads) +
                       " threads in a block of " +
                       std::to_string(emu::BlockThreadCount()));
    }
    if (storage_.block_serial == emu::BlockSerial() &&
        storage_.syncthreads_at_last_use == emu::SyncThreadsCompleted()) {
      emu::KernelError(
          "cub::BlockScan::TempStorage reused without a __syncthreads() "
          "since its last use");
    }
    const unsigned t = threadIdx.x;
    storage_.items[t] = input;
    emu::BlockBarrier(emu::BarrierKind::kBlockScan,
                      emu::BarrierAction{ScanItems, &storage_});
    output = storage_.items[t];
    block_aggregate = storage_.aggregate;
    storage_.block_serial = emu::BlockSerial();
    storage_.syncthreads_at_last_use = emu::SyncThreadsCompleted();
  }

 private:
  // Once every thread has put its item in: the exclusive prefix sums in
  // place, and the total.
  static void ScanItems(void* argument) {
    auto& storage = *static_cast<TempStorage*>(argument);
    T running = T();
    for (int i = 0; i < kBlockThreads; ++i) {
      const T item = storage.items[i];
      storage.items[i] = running;
      running = running + item;
    }
    storage.aggregate = running;
  }

  TempStorage& storage_;
};

}  // namespace cub

#endif  // ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_CUB_BLOCK_BLOCK_SCAN_CUH_
