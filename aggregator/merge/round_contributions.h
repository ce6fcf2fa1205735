// Collects the contributions of one round as they arrive, in any order, in
// slots indexed by rank, so the merge that follows sees them in rank order
// whatever the arrival order was.
#ifndef ENTROGRAD_AGGREGATOR_MERGE_ROUND_CONTRIBUTIONS_H_
#define ENTROGRAD_AGGREGATOR_MERGE_ROUND_CONTRIBUTIONS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "aggregator/merge/sparse_merge.h"

namespace entrograd::aggregator {

// Owns the contributions it is given (moved in). Contents are validated by
// the merge, not on Add.
//
// Thread safety: not thread-safe; the caller serialises access to a round.
class RoundContributions {
 public:
  // `world_size` ranks contributing to a vector of `numel` elements. A
  // world_size < 1 gives a round that can never complete; Merge reports it.
  RoundContributions(uint64_t numel, int world_size);

  // Stores rank `rank`'s sparse (strictly ascending indices, one value each)
  // or dense (numel values) contribution.
  // Errors: INVALID_ARGUMENT when rank is outside [0, world_size);
  // FAILED_PRECONDITION when that rank already contributed (the round is
  // unchanged).
  absl::Status AddSparse(int rank, std::vector<uint32_t> indices,
                         std::vector<float> values);
  absl::Status AddDense(int rank, std::vector<float> values);

  int world_size() const { return world_size_; }
  int received() const { return received_; }
  bool complete() const { return world_size_ >= 1 && received_ == world_size_; }

  // Merges the round with `merger` into `*out` (see SparseMerger::Merge).
  // Errors: FAILED_PRECONDITION naming the lowest missing rank when the round
  // is not complete; otherwise as SparseMerger::Merge.
  absl::Status Merge(SparseMerger& merger, MergedUpdate* out) const;

 private:
  struct Slot {
    bool present = false;
    bool dense = false;
    std::vector<uint32_t> indices;
    std::vector<float> values;
  };

  absl::Status CheckRank(int rank) const;

  uint64_t numel_;
  int world_size_;
  int received_ = 0;
  std::vector<Slot> slots_;
};

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_MERGE_ROUND_CONTRIBUTIONS_H_
