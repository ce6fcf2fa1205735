// SparseMerger: checks the round's shape, then dispatches to a strategy,
// which checks the contents (see MergeValidated).

#include "aggregator/merge/sparse_merge.h"

#include <algorithm>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "aggregator/merge/merge_strategies.h"
#include "aggregator/merge/merge_validation.h"
#include "entrograd/common/status_macros.h"
#include "entrograd/codec.h"

namespace entrograd::aggregator {
namespace {

void Clear(MergedUpdate* out) {
  out->numel = 0;
  out->indices.clear();
  out->values.clear();
}

// Clears *out and returns ValidateRound's error for a round RoundShapeOk
// refused.
absl::Status Reject(uint64_t numel, int world_size,
                    absl::Span<const RankContribution> contributions,
                    MergedUpdate* out) {
  Clear(out);
  uint64_t total_nonzeros = 0;
  absl::Status status = merge_internal::ValidateRound(
      numel, world_size, contributions, &total_nonzeros);
  if (status.ok()) {
    // Unreachable: RoundShapeOk refuses only rounds ValidateRound rejects.
    status = absl::InternalError("merge: inconsistent input checks");
  }
  return status;
}

}  // namespace

SparseMerger::SparseMerger() = default;
SparseMerger::~SparseMerger() = default;

// The cheap shape checks come first: the default strategy checks the
// contents while merging (one pass over the inputs instead of two). Any
// failure is named by ValidateRound, which walks the ranks in order.
absl::Status SparseMerger::Merge(
    uint64_t numel, int world_size,
    absl::Span<const RankContribution> contributions, MergedUpdate* out) {
  uint64_t total_nonzeros = 0;
  if (!merge_internal::RoundShapeOk(numel, world_size, contributions,
                                    &total_nonzeros)) {
    return Reject(numel, world_size, contributions, out);
  }
  return MergeValidated(ChooseMergeStrategy(numel, total_nonzeros, world_size),
                        numel, total_nonzeros, contributions, out);
}

absl::Status SparseMerger::MergeWith(
    MergeStrategy strategy, uint64_t numel, int world_size,
    absl::Span<const RankContribution> contributions, MergedUpdate* out) {
  uint64_t total_nonzeros = 0;
  if (!merge_internal::RoundShapeOk(numel, world_size, contributions,
                                    &total_nonzeros)) {
    return Reject(numel, world_size, contributions, out);
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
      // Checks the contents itself, as it goes.
      status = merge_internal::BlockedAccumulate(
          numel, contributions, max_output, &block_sums_, &block_touched_, out);
      break;
    case MergeStrategy::kKWayMerge:
      status = merge_internal::ValidateRound(
          numel, static_cast<int>(contributions.size()), contributions,
          &total_nonzeros);
      if (status.ok()) {
        status =
            merge_internal::KWayMerge(numel, contributions, max_output, out);
      }
      break;
    case MergeStrategy::kSmallBlockAccumulate:
      // Validates up front: one vectorised pass is cheaper than checking the
      // many short runs of a small block one by one.
      status = merge_internal::ValidateRound(
          numel, static_cast<int>(contributions.size()), contributions,
          &total_nonzeros);
      if (status.ok()) {
        status = merge_internal::SmallBlockAccumulate(
            numel, contributions, max_output, &block_sums_, &block_touched_,
            out);
      }
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
