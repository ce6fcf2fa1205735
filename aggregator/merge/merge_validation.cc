// Each check is a branch-free pass over a rank's arrays (cheap next to the
// merge); only when a pass fails is the array scanned again to find and name
// the first bad position.

#include "aggregator/merge/merge_validation.h"

#include <cmath>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "aggregator/merge/float_bits.h"
#include "aggregator/merge/merge_checks.h"
#include "aggregator/merge/sparse_merge.h"
#include "entrograd/common/status_macros.h"
#include "entrograd/codec.h"

namespace entrograd::aggregator::merge_internal {
namespace {

absl::Status CheckIndices(uint64_t numel, int rank,
                          absl::Span<const uint32_t> indices) {
  if (indices.empty()) return absl::OkStatus();
  // Ascending means the last index is the largest.
  if (StrictlyAscending(indices.data(), indices.size()) &&
      indices.back() < numel) {
    return absl::OkStatus();
  }
  for (size_t j = 0; j < indices.size(); ++j) {
    if (indices[j] >= numel) {
      return absl::InvalidArgumentError(
          absl::StrCat("rank ", rank, ": index ", indices[j], " at position ",
                       j, " is >= numel ", numel));
    }
    if (j > 0 && indices[j] <= indices[j - 1]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rank ", rank, ": index ", indices[j], " at position ", j,
          " is not greater than previous index ", indices[j - 1],
          indices[j] == indices[j - 1] ? " (repeated)" : " (descending)"));
    }
  }
  return absl::OkStatus();  // unreachable: the fast pass found a problem
}

absl::Status CheckValues(int rank, absl::Span<const float> values) {
  if (AllFinite(values.data(), values.size())) return absl::OkStatus();
  for (size_t j = 0; j < values.size(); ++j) {
    if (IsNonFinite(values[j])) {
      return absl::InvalidArgumentError(absl::StrCat("rank ", rank, ": value ",
                                                     values[j], " at position ",
                                                     j, " is not finite"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckContribution(uint64_t numel, int rank,
                               const RankContribution& contribution) {
  if (contribution.dense) {
    if (!contribution.indices.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("rank ", rank, ": dense contribution with ",
                       contribution.indices.size(), " indices"));
    }
    if (contribution.values.size() != numel) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rank ", rank, ": dense contribution has ",
          contribution.values.size(), " values for numel ", numel));
    }
  } else if (contribution.indices.size() != contribution.values.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, ": ", contribution.indices.size(),
                     " indices but ", contribution.values.size(), " values"));
  }
  ENTROGRAD_RETURN_IF_ERROR(CheckIndices(numel, rank, contribution.indices));
  return CheckValues(rank, contribution.values);
}

}  // namespace

absl::Status ValidateRound(uint64_t numel, int world_size,
                           absl::Span<const RankContribution> contributions,
                           uint64_t* total_nonzeros) {
  if (numel == 0) {
    return absl::InvalidArgumentError("numel: must not be 0");
  }
  if (numel > kMaxPayloadNumel) {
    return absl::InvalidArgumentError(absl::StrCat(
        "numel: ", numel, " exceeds kMaxPayloadNumel ", kMaxPayloadNumel));
  }
  if (world_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("world_size: ", world_size, " must be >= 1"));
  }
  if (contributions.size() != static_cast<size_t>(world_size)) {
    return absl::InvalidArgumentError(
        absl::StrCat("contributions: ", contributions.size(),
                     " ranks for world_size ", world_size));
  }
  uint64_t total = 0;
  for (int rank = 0; rank < world_size; ++rank) {
    ENTROGRAD_RETURN_IF_ERROR(
        CheckContribution(numel, rank, contributions[rank]));
    total += contributions[rank].values.size();
  }
  *total_nonzeros = total;
  return absl::OkStatus();
}

bool RoundShapeOk(uint64_t numel, int world_size,
                  absl::Span<const RankContribution> contributions,
                  uint64_t* total_nonzeros) {
  if (numel == 0 || numel > kMaxPayloadNumel || world_size < 1 ||
      contributions.size() != static_cast<size_t>(world_size)) {
    return false;
  }
  uint64_t total = 0;
  for (const RankContribution& c : contributions) {
    const bool shape_ok = c.dense ? c.indices.empty() && c.values.size() == numel
                                  : c.indices.size() == c.values.size();
    if (!shape_ok) return false;
    total += c.values.size();
  }
  *total_nonzeros = total;
  return true;
}

}  // namespace entrograd::aggregator::merge_internal
