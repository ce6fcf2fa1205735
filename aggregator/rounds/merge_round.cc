#include "aggregator/rounds/merge_round.h"

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
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

// The merge is the mean of the ranks' values, never larger in magnitude
// than the largest of them, so a type every contribution fit in holds it
// without saturating.
absl::StatusOr<EncodedPayload> EncodeMergedValues(uint64_t numel,
                                                  const MergedUpdate& merged,
                                                  ValueType type) {
  EncodeOptions options;
  options.value_type = type;
  return EncodeSparse(numel, merged.indices, merged.values, options);
}

}  // namespace

absl::StatusOr<std::shared_ptr<const v1::AggregatorMessage>> MergeRound(
    int64_t step, uint32_t layer,
    const std::vector<std::optional<DecodedPayload>>& by_rank,
    uint64_t max_message_bytes,
    absl::Span<const ValueType> accepted_by_every_rank) {
  const int world_size = static_cast<int>(by_rank.size());
  std::vector<RankContribution> contributions;
  contributions.reserve(world_size);
  uint64_t numel = 0;
  for (const std::optional<DecodedPayload>& payload : by_rank) {
    numel = payload->numel;
    contributions.push_back(
        payload->dense
            ? RankContribution::Dense(payload->values)
            : RankContribution::Sparse(payload->indices, payload->values));
  }
  // One merger per thread: its scratch (numel-sized) is reused across rounds.
  thread_local SparseMerger merger;
  MergedUpdate merged;
  absl::Status status = merger.Merge(numel, world_size, contributions, &merged);
  absl::StatusOr<EncodedPayload> encoded =
      status.ok() ? EncodeMergedValues(numel, merged,
                                       DownlinkValueType(
                                           by_rank, accepted_by_every_rank))
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
