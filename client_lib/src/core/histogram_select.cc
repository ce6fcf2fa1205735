#include "core/histogram_select.h"

#include <algorithm>
#include <numeric>

#include "core/candidate_select.h"
#include "core/interval_sums.h"
#include "core/magnitude_key.h"

namespace entrograd {

void AddToMagnitudeHistogram(absl::Span<const float> values,
                             uint32_t* histogram) {
  for (float value : values) ++histogram[BucketOf(MagnitudeKey(value))];
}

absl::Status CheckHistogramFinite(absl::string_view what,
                                  absl::Span<const float> values,
                                  const uint32_t* histogram) {
  for (uint32_t bucket = kFirstNonFiniteBucket; bucket < kHistogramBuckets;
       ++bucket) {
    if (histogram[bucket] != 0) {
      return NonFiniteError(what, values, 0,
                            static_cast<int64_t>(values.size()));
    }
  }
  return absl::OkStatus();
}

void SelectLargestWithHistogram(absl::Span<const float> values, int64_t k,
                                const uint32_t* histogram,
                                SelectScratch* scratch,
                                std::vector<uint32_t>* indices) {
  const int64_t n = static_cast<int64_t>(values.size());
  if (k <= 0) {
    indices->clear();
    return;
  }
  if (k >= n) {
    indices->resize(n);
    std::iota(indices->begin(), indices->end(), 0u);
    return;
  }

  // The boundary bucket holds the k-th largest magnitude: every bucket above
  // it is taken whole, and `need` entries come from the boundary bucket.
  int64_t above = 0;
  uint32_t boundary = kFirstNonFiniteBucket;
  while (boundary > 0) {
    --boundary;
    if (above + histogram[boundary] >= k) break;
    above += histogram[boundary];
  }
  const int64_t in_boundary = histogram[boundary];
  const int64_t need = k - above;

  // One pass collects, in index order, every entry at or above the boundary
  // bucket. Branch-free: the slot is written every time and kept only when
  // the entry qualifies, so the speed does not depend on the data.
  const uint32_t min_key = boundary << kBucketShift;
  std::vector<uint32_t>& survivors = scratch->survivors;
  survivors.resize(static_cast<size_t>(above + in_boundary) + 1);
  uint32_t* out = survivors.data();
  size_t written = 0;
  for (int64_t i = 0; i < n; ++i) {
    out[written] = static_cast<uint32_t>(i);
    written += MagnitudeKey(values[i]) >= min_key;
  }
  survivors.resize(written);

  if (need == in_boundary) {
    indices->assign(survivors.begin(), survivors.end());
    return;
  }

  // Rank the boundary bucket exactly among the survivors (a superset of the
  // answer, in index order).
  std::vector<uint64_t>& candidates = scratch->candidates;
  candidates.resize(survivors.size());
  for (size_t j = 0; j < survivors.size(); ++j) {
    candidates[j] = RankKey(MagnitudeKey(values[survivors[j]]), survivors[j]);
  }
  SelectAmongCandidates(candidates, k, &scratch->ranked_keys, indices);
}

}  // namespace entrograd
