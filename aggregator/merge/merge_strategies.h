// The merge strategies behind SparseMerger (see MergeStrategy in
// sparse_merge.h). All add in ascending rank order per index starting
// from kEmptySum, and divide each sum by float(W). Internal to entrograd_aggregator_merge.
#ifndef ENTROGRAD_AGGREGATOR_MERGE_MERGE_STRATEGIES_H_
#define ENTROGRAD_AGGREGATOR_MERGE_MERGE_STRATEGIES_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "aggregator/merge/sparse_merge.h"

namespace entrograd::aggregator::merge_internal {

// Elements per block of BlockedAccumulate: 256 KiB of sums, which stays in
// a core's L2 cache. A multiple of 64 (one bitmap word).
inline constexpr uint64_t kBlockElements = uint64_t{1} << 16;

// Fills out->indices/values (out->numel is left to the caller). `max_output`
// bounds the merged count (min(numel, total nonzeros)). `block_sums` (all
// kEmptySum) and `block_touched` (all 0) are scratch, grown as needed and
// returned in that state, errors included.
// Takes a round whose shape RoundShapeOk accepted and checks the contents
// (index order and range, finite values) while merging.
// Errors: INVALID_ARGUMENT, ValidateRound's error when the contents are bad,
// else when a sum overflows float32; `out` is then partly written and the
// caller must clear it.
absl::Status BlockedAccumulate(uint64_t numel,
                               absl::Span<const RankContribution> contributions,
                               uint64_t max_output,
                               std::vector<float>* block_sums,
                               std::vector<uint64_t>* block_touched,
                               MergedUpdate* out);

// As BlockedAccumulate, by a heap-driven k-way merge; needs no scratch.
// Takes a round ValidateRound accepted.
absl::Status KWayMerge(uint64_t numel,
                       absl::Span<const RankContribution> contributions,
                       uint64_t max_output, MergedUpdate* out);

// As BlockedAccumulate with blocks of kSmallBlockElements, for very sparse
// rounds (see MergeStrategy::kSmallBlockAccumulate). Takes a round
// ValidateRound accepted; same scratch contract as BlockedAccumulate.
// Errors: INVALID_ARGUMENT when a sum overflows float32 (`out` then partly
// written; the caller must clear it).
inline constexpr int kSmallBlockShift = 15;
inline constexpr uint64_t kSmallBlockElements = uint64_t{1} << kSmallBlockShift;
absl::Status SmallBlockAccumulate(
    uint64_t numel, absl::Span<const RankContribution> contributions,
    uint64_t max_output, std::vector<float>* block_sums,
    std::vector<uint64_t>* block_touched, MergedUpdate* out);

}  // namespace entrograd::aggregator::merge_internal

#endif  // ENTROGRAD_AGGREGATOR_MERGE_MERGE_STRATEGIES_H_
