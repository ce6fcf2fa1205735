#include "core/exact_select.h"

#include <algorithm>
#include <numeric>

#include "core/candidate_select.h"
#include "core/histogram_select.h"
#include "core/interval_sums.h"
#include "core/magnitude_key.h"

namespace entrograd {

namespace {

absl::Status CheckFinite(absl::string_view what,
                         absl::Span<const float> values) {
  uint32_t max_key = 0;
  for (float value : values) max_key = std::max(max_key, MagnitudeKey(value));
  if (max_key < kNonFiniteKey) return absl::OkStatus();
  return NonFiniteError(what, values, 0, static_cast<int64_t>(values.size()));
}

// The candidate path over values already in memory. False when the bound
// missed; the caller then takes the histogram path.
bool TryCandidatePath(absl::Span<const float> values, int64_t k,
                      SelectScratch* scratch) {
  const int64_t n = static_cast<int64_t>(values.size());
  std::vector<uint32_t>& keys = scratch->ranked;
  keys.resize(CandidateSampleCount(n));
  for (size_t j = 0; j < keys.size(); ++j) {
    keys[j] = MagnitudeKey(values[CandidateSamplePosition(j, n)]);
  }
  uint32_t min_key = 0;
  if (!CandidateBoundFromSample(&keys, n, k, &min_key)) return false;
  CandidateCollector collector(min_key, CandidateCapacity(n, k),
                               &scratch->candidates);
  for (int64_t begin = 0; begin < n; begin += CandidateCollector::kScanBlock) {
    collector.Scan(values.data(), begin,
                   std::min(n, begin + CandidateCollector::kScanBlock));
  }
  return collector.Finish() &&
         static_cast<int64_t>(scratch->candidates.size()) >= k;
}

}  // namespace

absl::Status CheckCandidatesFinite(absl::string_view what,
                                   absl::Span<const float> values,
                                   absl::Span<const uint64_t> candidates) {
  // NaN and Inf have the largest keys, so every one is a candidate, and the
  // first candidate that is one is the first in the layer.
  for (uint64_t candidate : candidates) {
    if (MagnitudeKeyOfRankKey(candidate) >= kNonFiniteKey) {
      const uint32_t index = IndexOfRankKey(candidate);
      return NonFiniteError(what, values, index, index + 1);
    }
  }
  return absl::OkStatus();
}

absl::Status SelectLargestExact(absl::string_view what,
                                absl::Span<const float> values, int64_t k,
                                SelectScratch* scratch,
                                std::vector<uint32_t>* indices) {
  const int64_t n = static_cast<int64_t>(values.size());
  if (k <= 0 || k >= n) {
    if (absl::Status status = CheckFinite(what, values); !status.ok()) {
      return status;
    }
    indices->resize(k <= 0 ? 0 : n);
    std::iota(indices->begin(), indices->end(), 0u);
    return absl::OkStatus();
  }
  if (TryCandidatePath(values, k, scratch)) {
    if (absl::Status status =
            CheckCandidatesFinite(what, values, scratch->candidates);
        !status.ok()) {
      return status;
    }
    SelectAmongCandidates(scratch->candidates, k, &scratch->ranked_keys,
                          indices);
    return absl::OkStatus();
  }
  // Histogram path: exact for every input, two passes.
  scratch->histogram.assign(kHistogramBuckets, 0);
  AddToMagnitudeHistogram(values, scratch->histogram.data());
  if (absl::Status status =
          CheckHistogramFinite(what, values, scratch->histogram.data());
      !status.ok()) {
    return status;
  }
  SelectLargestWithHistogram(values, k, scratch->histogram.data(), scratch,
                             indices);
  return absl::OkStatus();
}

}  // namespace entrograd
