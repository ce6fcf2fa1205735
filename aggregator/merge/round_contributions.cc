#include "aggregator/merge/round_contributions.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "aggregator/merge/sparse_merge.h"
#include "entrograd/common/status_macros.h"

namespace entrograd::aggregator {

RoundContributions::RoundContributions(uint64_t numel, int world_size)
    : numel_(numel),
      world_size_(world_size),
      slots_(world_size > 0 ? static_cast<size_t>(world_size) : 0) {}

absl::Status RoundContributions::CheckRank(int rank) const {
  if (rank < 0 || rank >= world_size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, ": outside [0, ", world_size_, ")"));
  }
  if (slots_[rank].present) {
    return absl::FailedPreconditionError(
        absl::StrCat("rank ", rank, ": already contributed to this round"));
  }
  return absl::OkStatus();
}

absl::Status RoundContributions::AddSparse(int rank,
                                           std::vector<uint32_t> indices,
                                           std::vector<float> values) {
  ENTROGRAD_RETURN_IF_ERROR(CheckRank(rank));
  Slot& slot = slots_[rank];
  slot.present = true;
  slot.dense = false;
  slot.indices = std::move(indices);
  slot.values = std::move(values);
  ++received_;
  return absl::OkStatus();
}

absl::Status RoundContributions::AddDense(int rank, std::vector<float> values) {
  ENTROGRAD_RETURN_IF_ERROR(CheckRank(rank));
  Slot& slot = slots_[rank];
  slot.present = true;
  slot.dense = true;
  slot.indices.clear();
  slot.values = std::move(values);
  ++received_;
  return absl::OkStatus();
}

absl::Status RoundContributions::Merge(SparseMerger& merger,
                                       MergedUpdate* out) const {
  std::vector<RankContribution> contributions;
  contributions.reserve(slots_.size());
  for (size_t rank = 0; rank < slots_.size(); ++rank) {
    const Slot& slot = slots_[rank];
    if (!slot.present) {
      return absl::FailedPreconditionError(
          absl::StrCat("rank ", rank, ": has not contributed yet (", received_,
                       " of ", world_size_, " received)"));
    }
    contributions.push_back(
        slot.dense ? RankContribution::Dense(slot.values)
                   : RankContribution::Sparse(slot.indices, slot.values));
  }
  return merger.Merge(numel_, world_size_, contributions, out);
}

}  // namespace entrograd::aggregator
