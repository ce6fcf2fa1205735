#include "cuda_emulation/warp_shuffle.h"

#include <vector>

#include "cuda_emulation/block_runner.h"

namespace entrograd::cuda_emulation {
namespace {

constexpr unsigned kWarpSize = 32;

// Per thread of the running block: what it offers, whose value it wants
// (its own index when none), and what it gets. Launches are serialised.
struct Exchange {
  std::vector<uint64_t> offered;
  std::vector<unsigned> source;
  std::vector<uint64_t> received;
};
Exchange& exchange = *new Exchange;  // never destroyed

void PickUp(void*) {
  const unsigned n = BlockThreadCount();
  for (unsigned t = 0; t < n; ++t) {
    exchange.received[t] = exchange.offered[exchange.source[t]];
  }
}

}  // namespace

uint64_t ShuffleDownBits(uint64_t bits, unsigned delta, unsigned width) {
  if (width == 0 || width > kWarpSize || (width & (width - 1)) != 0) {
    KernelError("__shfl_down_sync: width must be a power of 2 up to 32");
  }
  const unsigned n = BlockThreadCount();
  if (exchange.offered.size() < n) {  // the first thread of a larger block
    exchange.offered.resize(n);
    exchange.source.resize(n);
    exchange.received.resize(n);
  }
  const unsigned t = LinearThreadIndex();
  const unsigned lane_in_segment = t % kWarpSize % width;
  unsigned source = t;
  if (lane_in_segment + delta < width) {
    source = t + delta;
    if (source >= n) {
      KernelError("__shfl_down_sync reads a lane past the end of the block");
    }
  }
  exchange.offered[t] = bits;
  exchange.source[t] = source;
  BlockBarrier(BarrierKind::kShuffle, BarrierAction{PickUp, nullptr});
  return exchange.received[t];
}

}  // namespace entrograd::cuda_emulation
