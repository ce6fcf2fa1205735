// Validation of a round's inputs before anything is merged, so a bad rank
// rejects the round without touching merger state. Internal to
// entrograd_aggregator_merge.
#ifndef ENTROGRAD_AGGREGATOR_MERGE_MERGE_VALIDATION_H_
#define ENTROGRAD_AGGREGATOR_MERGE_MERGE_VALIDATION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "aggregator/merge/sparse_merge.h"

namespace entrograd::aggregator::merge_internal {

// The errors listed for SparseMerger::Merge, except the float32 overflow of
// a sum (found while merging). On success sets *total_nonzeros to the pairs
// the round carries (numel for each dense rank).
absl::Status ValidateRound(uint64_t numel, int world_size,
                           absl::Span<const RankContribution> contributions,
                           uint64_t* total_nonzeros);

// The checks of ValidateRound that need no pass over the data: numel,
// world_size, the number of contributions and each rank's array sizes.
// Returns false where ValidateRound would fail on one of them; ValidateRound
// then names the error (it walks the ranks in order, so a content error of
// a lower rank still comes first). On true sets *total_nonzeros as
// ValidateRound does. The contents (index order and range, finite values)
// are left to BlockedAccumulate, which checks them while merging, or to
// ValidateRound.
bool RoundShapeOk(uint64_t numel, int world_size,
                  absl::Span<const RankContribution> contributions,
                  uint64_t* total_nonzeros);

}  // namespace entrograd::aggregator::merge_internal

#endif  // ENTROGRAD_AGGREGATOR_MERGE_MERGE_VALIDATION_H_
