// Bit-level float tests shared by the merge strategies and validation.
// Internal to entrograd_aggregator_merge.
#ifndef ENTROGRAD_AGGREGATOR_MERGE_FLOAT_BITS_H_
#define ENTROGRAD_AGGREGATOR_MERGE_FLOAT_BITS_H_

#include <cstdint>

#include "absl/base/casts.h"

namespace entrograd::aggregator::merge_internal {

// Exponent all ones: NaN or +-Inf. On bits so -ffast-math cannot fold it.
inline bool IsNonFinite(float value) {
  return (absl::bit_cast<uint32_t>(value) & 0x7f800000u) == 0x7f800000u;
}

// A dense contribution carries every element that is not +0.0 (see
// sparse_merge.h).
inline bool IsPositiveZero(float value) {
  return absl::bit_cast<uint32_t>(value) == 0;
}

// The starting value of every sum: -0.0 + x == x bitwise for all x, so an
// absent rank contributes nothing and the first contribution is in effect
// assigned.
inline constexpr float kEmptySum = -0.0f;

}  // namespace entrograd::aggregator::merge_internal

#endif  // ENTROGRAD_AGGREGATOR_MERGE_FLOAT_BITS_H_
