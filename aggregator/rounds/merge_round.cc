#include "aggregator/rounds/merge_round.h"

#include <algorithm>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "aggregator/merge/global_top_k.h"
#include "aggregator/merge/sparse_merge.h"
#include "aggregator/rounds/round_error.h"
#include "entrograd/wire/payload_proto.h"

namespace entrograd::aggregator {
namespace {

// The contributions' common value type where every rank accepts it, else
// float32.
ValueType DownlinkValueType(
    const std::vector<std::optional<DecodedPayload>>& by_rank,
    absl::Span<const ValueType> accepted_by_every_rank) {
  const ValueType first = by_rank.front()->value_type;
  for (const std::optional<DecodedPayload>& payload : by_rank) {
    if (payload->value_type != first) return ValueType::kF32;
  }
  return absl::c_linear_search(accepted_by_every_rank, first) ? first
                                                              : ValueType::kF32;
}

// The sparse payload with the fewest index bytes (ties: the order of
// kAllIndexEncodings), gap_range only where every rank decodes it; the
// value bytes are the same for all of them. The older encodings are costed
// by counting; gap_range, the last in that order, only by running its
// coder, so it is encoded once and kept when it wins.
absl::StatusOr<EncodedPayload> EncodeWithFewestIndexBytes(
    uint64_t numel, const MergedUpdate& merged, EncodeOptions options,
    bool gap_range_accepted) {
  IndexEncoding best = IndexEncoding::kRawU32;
  int64_t best_bytes = IndexBytes(best, numel, merged.indices);
  for (IndexEncoding encoding : kAllIndexEncodings) {
    if (encoding == IndexEncoding::kDense ||
        encoding == IndexEncoding::kGapRange) {
      continue;
    }
    const int64_t bytes = IndexBytes(encoding, numel, merged.indices);
    if (bytes < best_bytes) {
      best = encoding;
      best_bytes = bytes;
    }
  }
  if (gap_range_accepted) {
    options.index_encoding = IndexEncoding::kGapRange;
    absl::StatusOr<EncodedPayload> gap_range =
        EncodeSparse(numel, merged.indices, merged.values, options);
    if (!gap_range.ok() ||
        static_cast<int64_t>(gap_range->index_bytes.size()) < best_bytes) {
      return gap_range;
    }
  }
  options.index_encoding = best;
  return EncodeSparse(numel, merged.indices, merged.values, options);
}

// The merge is the mean of the ranks' values, never larger in magnitude
// than the largest of them, so a type every contribution fit in holds it
// without saturating. A merge that left entries out is never sent dense:
// a dense payload carries every index, and the ranks read "carried" as
// "applied" (ALGORITHM.md step 7).
absl::StatusOr<EncodedPayload> EncodeMergedValues(uint64_t numel,
                                                  const MergedUpdate& merged,
                                                  ValueType type,
                                                  bool left_entries_out,
                                                  bool gap_range_accepted) {
  EncodeOptions options;
  options.value_type = type;
  options.consider_gap_range = gap_range_accepted;
  if (left_entries_out) {
    return EncodeWithFewestIndexBytes(numel, merged, options,
                                      gap_range_accepted);
  }
  return EncodeSparse(numel, merged.indices, merged.values, options);
}

}  // namespace

absl::StatusOr<std::shared_ptr<const v1::AggregatorMessage>> MergeRound(
    int64_t step, uint32_t layer,
    const std::vector<std::optional<DecodedPayload>>& by_rank,
    uint64_t max_message_bytes,
    absl::Span<const ValueType> accepted_by_every_rank,
    double merged_keep_factor, bool gap_range_accepted_by_every_rank) {
  const int world_size = static_cast<int>(by_rank.size());
  std::vector<RankContribution> contributions;
  contributions.reserve(world_size);
  uint64_t numel = 0;
  uint64_t largest_count = 0;
  for (const std::optional<DecodedPayload>& payload : by_rank) {
    numel = payload->numel;
    largest_count = std::max<uint64_t>(
        largest_count, payload->dense ? payload->numel : payload->indices.size());
    contributions.push_back(
        payload->dense
            ? RankContribution::Dense(payload->values)
            : RankContribution::Sparse(payload->indices, payload->values));
  }
  // One merger per thread: its scratch (numel-sized) is reused across rounds.
  thread_local SparseMerger merger;
  MergedUpdate merged;
  absl::Status status = merger.Merge(numel, world_size, contributions, &merged);
  const bool left_entries_out =
      status.ok() &&
      KeepLargestMerged(GlobalKeepCount(merged_keep_factor, largest_count),
                        &merged);
  absl::StatusOr<EncodedPayload> encoded =
      status.ok() ? EncodeMergedValues(
                        numel, merged,
                        DownlinkValueType(by_rank, accepted_by_every_rank),
                        left_entries_out, gap_range_accepted_by_every_rank)
                  : absl::StatusOr<EncodedPayload>(status);
  if (!encoded.ok()) return absl::AbortedError(encoded.status().message());
  auto message = std::make_shared<v1::AggregatorMessage>();
  v1::MergedLayer* merged_layer = message->mutable_merged_layer();
  merged_layer->set_step(step);
  merged_layer->set_layer_index(layer);
  merged_layer->set_contributors(world_size);
  PayloadToProto(*encoded, merged_layer->mutable_payload());
  const uint64_t message_bytes = message->ByteSizeLong();
  if (message_bytes > max_message_bytes) {
    return WithRoundErrorReason(
        absl::ResourceExhaustedError(absl::StrCat(
            "the merged update is ", message_bytes,
            " bytes, more than max_message_bytes = ", max_message_bytes,
            " (the ranks together keep too many entries)")),
        v1::ROUND_ERROR_REASON_MERGED_TOO_LARGE);
  }
  return message;
}

}  // namespace entrograd::aggregator
