// The merge of one complete round into the MergedLayer every rank receives:
// decoded contributions in, one shared message out. No lock and no registry:
// the registry calls it without its lock, after taking the round out of its
// maps (in the server, on a merge pool thread), and tests call it directly.
//
// Determinism: contributions are merged in rank order (by_rank[0], [1], ...)
// by SparseMerger (aggregator/merge/sparse_merge.h), which uses no threads
// or atomics; the encoding is a pure function of the merged values. So the
// bytes out depend only on the contributions, never on arrival order or on
// the thread that runs the merge.
#ifndef ENTROGRAD_AGGREGATOR_ROUNDS_MERGE_ROUND_H_
#define ENTROGRAD_AGGREGATOR_ROUNDS_MERGE_ROUND_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "entrograd/codec.h"
#include "entrograd/v1/aggregator.pb.h"

namespace entrograd::aggregator {

// Merges round (step, layer) from `by_rank`, every element set (by_rank[r]
// is rank r's decoded contribution, all of the same numel), and encodes it
// as an AggregatorMessage holding a MergedLayer with contributors =
// by_rank.size().
//
// The merged values go in float32 unless every contribution came in the
// same narrower type (f16, bf16 or e5m2) and `accepted_by_every_rank` lists
// it: then in that type, which shrinks the downlink's values the way the
// senders shrank theirs. The merge is a mean, so it fits in the type its
// contributions fit in. The float32 mean is rounded once, the same bytes for
// every rank; the choice depends on the contributions and on what the ranks
// accept, so it is deterministic.
//
// With `merged_keep_factor` c > 0 (global top-k, the round's
// MergedKeepFactor) only the K = ceil(c * largest contribution's count)
// merged entries of largest |value| are kept (global_top_k.h), and a merge
// that left entries out is never encoded dense. c = 0: the whole union.
//
// The index encoding is codec.h's automatic choice, or, for a merge that
// left entries out, the sparse encoding with the fewest index bytes;
// INDEX_ENCODING_GAP_RANGE is among the candidates only when
// `gap_range_accepted_by_every_rank`.
//
// Errors: ABORTED when the merge or the encoding fails (a
// merged sum that overflows float32, contributions of different shapes);
// RESOURCE_EXHAUSTED with reason MERGED_TOO_LARGE (round_error.h) when the
// message would be larger than `max_message_bytes`, which gRPC would refuse
// to write. `by_rank` must not be empty.
// Thread safety: thread-safe. Each thread keeps one merge scratch (one
// layer's size, reused across calls), so a fixed pool of threads bounds
// that memory.
absl::StatusOr<std::shared_ptr<const v1::AggregatorMessage>> MergeRound(
    int64_t step, uint32_t layer,
    const std::vector<std::optional<DecodedPayload>>& by_rank,
    uint64_t max_message_bytes,
    absl::Span<const ValueType> accepted_by_every_rank = {},
    double merged_keep_factor = 0.0,
    bool gap_range_accepted_by_every_rank = false);

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_ROUNDS_MERGE_ROUND_H_
