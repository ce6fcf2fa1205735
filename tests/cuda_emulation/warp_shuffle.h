// The exchange behind the emulated __shfl_down_sync (device_builtins.h):
// every thread of the block offers its value and picks up another's in one
// barrier, whose completion action does the picking for all at once.
#ifndef ENTROGRAD_TESTS_CUDA_EMULATION_WARP_SHUFFLE_H_
#define ENTROGRAD_TESTS_CUDA_EMULATION_WARP_SHUFFLE_H_

#include <cstdint>

namespace entrograd::cuda_emulation {

// The bits offered by lane (lane + delta) of the caller's `width`-lane
// segment of its warp, or `bits` itself when that lane lies past the
// segment. Every thread of the block must call it; width is a power of 2
// up to 32 (checked), and the source lane must exist (checked: a partial
// last warp has none past the block's end).
uint64_t ShuffleDownBits(uint64_t bits, unsigned delta, unsigned width);

}  // namespace entrograd::cuda_emulation

#endif  // ENTROGRAD_TESTS_CUDA_EMULATION_WARP_SHUFFLE_H_
