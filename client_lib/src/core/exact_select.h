// Exact top-k by magnitude, the engine behind SelectLargestMagnitude and
// LayerCompressor. Private to the compression core.
//
// Fast path: candidate_select.h. Whenever its bound misses, the histogram
// path (histogram_select.h) runs instead. Either path returns the exact
// answer, so the result never depends on which ran.
#ifndef ENTROGRAD_CORE_EXACT_SELECT_H_
#define ENTROGRAD_CORE_EXACT_SELECT_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "entrograd/select.h"

namespace entrograd {

// Writes the ascending indices of the k (0 <= k <= values.size()) entries of
// largest magnitude, ties by smaller index. INVALID_ARGUMENT naming `what`
// and the position when `values` holds NaN or Inf; *indices is then
// unspecified.
absl::Status SelectLargestExact(absl::string_view what,
                                absl::Span<const float> values, int64_t k,
                                SelectScratch* scratch,
                                std::vector<uint32_t>* indices);

// OK unless a candidate (rank keys, in index order, of entries at or above
// a bound) is NaN or Inf; such entries always are candidates, so this checks
// the whole layer. INVALID_ARGUMENT names `what` and the first position.
absl::Status CheckCandidatesFinite(absl::string_view what,
                                   absl::Span<const float> values,
                                   absl::Span<const uint64_t> candidates);

}  // namespace entrograd

#endif  // ENTROGRAD_CORE_EXACT_SELECT_H_
