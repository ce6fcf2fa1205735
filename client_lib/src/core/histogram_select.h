// The second half of exact top-k selection, shared by SelectLargestMagnitude
// and the fused LayerCompressor pass that builds the histogram while it
// accumulates. Private to the compression core.
#ifndef ENTROGRAD_CORE_HISTOGRAM_SELECT_H_
#define ENTROGRAD_CORE_HISTOGRAM_SELECT_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "entrograd/select.h"

namespace entrograd {

// Adds the bucket of every value to `histogram` (kHistogramBuckets counts).
void AddToMagnitudeHistogram(absl::Span<const float> values,
                             uint32_t* histogram);

// OK when the histogram has no Inf/NaN bucket; else INVALID_ARGUMENT naming
// `what` and the first non-finite position in `values`.
absl::Status CheckHistogramFinite(absl::string_view what,
                                  absl::Span<const float> values,
                                  const uint32_t* histogram);

// Selects the k (0 <= k <= values.size()) largest-magnitude entries, ties by
// smaller index, into *indices in ascending order, given the histogram of
// `values` (finite). Uses scratch->survivors and scratch->ranked.
void SelectLargestWithHistogram(absl::Span<const float> values, int64_t k,
                                const uint32_t* histogram,
                                SelectScratch* scratch,
                                std::vector<uint32_t>* indices);

}  // namespace entrograd

#endif  // ENTROGRAD_CORE_HISTOGRAM_SELECT_H_
