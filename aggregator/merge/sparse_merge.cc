// SparseMerger: validates the whole round, then dispatches to a strategy.

#include "aggregator/merge/sparse_merge.h"

#include <algorithm>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "aggregator/merge/merge_strategies.h"
#include "aggregator/merge/merge_validation.h"
#include "common/status_macros.h"
#include "entrograd/codec.h"

namespace entrograd::aggregator {
namespace {

void Clear(MergedUpdate* out) {
  out->numel = 0;
  out->indices.clear();
  out->values.clear();
}

}  // namespace

SparseMerger::SparseMerger() = default;
SparseMerger::~SparseMerger() = default;

absl::Status SparseMerger::Merge(
    uint64_t numel, int world_size,
    absl::Span<const RankContribution> contributions, MergedUpdate* out) {
  uint64_t total_nonzeros = 0;
  const absl::Status status = merge_internal::ValidateRound(
      numel, world_size, contributions, &total_nonzeros);
  if (!status.ok()) {
    Clear(out);
    return status;
  }
  return MergeValidated(ChooseMergeStrategy(numel, total_nonzeros, world_size),
                        numel, total_nonzeros, contributions, out);
}

absl::Status SparseMerger::MergeWith(
    MergeStrategy strategy, uint64_t numel, int world_size,
    absl::Span<const RankContribution> contributions, MergedUpdate* out) {
  uint64_t total_nonzeros = 0;
  const absl::Status status = merge_internal::ValidateRound(
      numel, world_size, contributions, &total_nonzeros);
  if (!status.ok()) {
    Clear(out);
    return status;
  }
  return MergeValidated(strategy, numel, total_nonzeros, contributions, out);
}

absl::Status SparseMerger::MergeValidated(
    MergeStrategy strategy, uint64_t numel, uint64_t total_nonzeros,
    absl::Span<const RankContribution> contributions, MergedUpdate* out) {
  const uint64_t max_output = std::min(numel, total_nonzeros);
  absl::Status status = absl::InvalidArgumentError("unknown merge strategy");
  switch (strategy) {
    case MergeStrategy::kBlockedAccumulate:
      status = merge_internal::BlockedAccumulate(
          numel, contributions, max_output, &block_sums_, &block_touched_, out);
      break;
    case MergeStrategy::kKWayMerge:
      status = merge_internal::KWayMerge(numel, contributions, max_output, out);
      break;
  }
  if (!status.ok()) {
    Clear(out);
    return status;
  }
  out->numel = numel;
  return absl::OkStatus();
}

absl::StatusOr<MergedUpdate> MergeContributions(
    uint64_t numel, int world_size,
    absl::Span<const RankContribution> contributions) {
  SparseMerger merger;
  MergedUpdate merged;
  ENTROGRAD_RETURN_IF_ERROR(
      merger.Merge(numel, world_size, contributions, &merged));
  return merged;
}

absl::StatusOr<EncodedPayload> EncodeMerged(const MergedUpdate& merged,
                                            const EncodeOptions& options) {
  return EncodeSparse(merged.numel, merged.indices, merged.values, options);
}

}  // namespace entrograd::aggregator
