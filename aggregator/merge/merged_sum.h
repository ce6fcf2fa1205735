// What both strategies do with a finished sum: reject overflow, divide by W.
// Internal to entrograd_aggregator_merge.
#ifndef ENTROGRAD_AGGREGATOR_MERGE_MERGED_SUM_H_
#define ENTROGRAD_AGGREGATOR_MERGE_MERGED_SUM_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace entrograd::aggregator::merge_internal {

// Finite inputs can still sum past FLT_MAX; such a round is rejected rather
// than sending Inf to every rank (docs/DESIGN.md "Failure is loud and bounded": NaN/Inf never reaches others).
inline absl::Status SumOverflowError(uint64_t index) {
  return absl::InvalidArgumentError(absl::StrCat(
      "merged sum at index ", index, " overflows float32; round rejected"));
}

}  // namespace entrograd::aggregator::merge_internal

#endif  // ENTROGRAD_AGGREGATOR_MERGE_MERGED_SUM_H_
