// Exact, deterministic selection of the entries with the largest magnitude
// (ALGORITHM.md 5.5): the k entries with the largest |x|, ties broken by the
// smaller index, returned as ascending indices. O(n), no full sort: an evenly
// spaced sample bounds the k-th largest |x| from below, one branch-free pass
// collects the entries above the bound, and nth_element ranks only those.
// When the bound misses, a histogram over the top 16 bits of |x|'s IEEE bit
// pattern finds the boundary bucket instead. Both are exact.
//
// Thread safety: the functions are pure; a SelectScratch must not be shared
// by concurrent calls.
#ifndef ENTROGRAD_SELECT_H_
#define ENTROGRAD_SELECT_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace entrograd {

// Buffers reused across calls so that a steady-state selection allocates
// nothing. Contents are unspecified between calls.
struct SelectScratch {
  std::vector<uint32_t> histogram;
  std::vector<uint32_t> survivors;
  std::vector<uint32_t> ranked;
  std::vector<uint64_t> candidates;
  std::vector<uint64_t> ranked_keys;
};

// Writes into *indices (resized to k) the indices of the k entries of
// `values` with the largest |value|, ties by smaller index, ascending.
// -0.0 and +0.0 have equal magnitude. `scratch` may be null (then buffers
// are allocated per call).
// Errors (INVALID_ARGUMENT): k < 0 or k > values.size(); values longer than
// 2^32 - 1; a NaN or Inf in values (naming its position). *indices is
// unchanged on error.
absl::Status SelectLargestMagnitude(absl::Span<const float> values, int64_t k,
                                    std::vector<uint32_t>* indices,
                                    SelectScratch* scratch = nullptr);

// Writes into *indices the ascending indices of every entry with
// |value| >= threshold (the constant-threshold baseline).
// Errors (INVALID_ARGUMENT): threshold negative or not finite; values longer
// than 2^32 - 1; a NaN or Inf in values. *indices is unchanged on error.
absl::Status SelectAtLeastMagnitude(absl::Span<const float> values,
                                    float threshold,
                                    std::vector<uint32_t>* indices);

}  // namespace entrograd

#endif  // ENTROGRAD_SELECT_H_
