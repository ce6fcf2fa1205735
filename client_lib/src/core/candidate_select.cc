#include "core/candidate_select.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace entrograd {

namespace {

// Elements tested together before any is stored: at k/n = 1% about 18% of
// 16-element groups hold a candidate; the rest cost one vector test.
constexpr int64_t kGroup = 16;
static_assert(CandidateCollector::kScanBlock % kGroup == 0);

}  // namespace

bool CandidateBoundFromSample(std::vector<uint32_t>* sample_keys, int64_t n,
                              int64_t k, uint32_t* min_key) {
  const int64_t samples = static_cast<int64_t>(sample_keys->size());
  if (k < 1 || samples < 1) return false;
  int64_t rank;
  if (samples == n) {
    rank = k;  // the sample is everything: the bound is exact
  } else {
    const double expected = static_cast<double>(k) * samples / n;
    rank = static_cast<int64_t>(
        std::ceil(1.25 * expected + 4.0 * std::sqrt(expected) + 8.0));
  }
  if (rank > samples / 2) return false;
  std::nth_element(sample_keys->begin(), sample_keys->begin() + (rank - 1),
                   sample_keys->end(), std::greater<uint32_t>());
  *min_key = (*sample_keys)[rank - 1];
  return true;
}

int64_t CandidateCapacity(int64_t n, int64_t k) {
  // Twice the 1.25 k target plus room for the slack terms at small k.
  return std::min<int64_t>(n, 3 * k + 4 * (n / kCandidateSampleSize + 1) * 16);
}

CandidateCollector::CandidateCollector(uint32_t min_key, int64_t capacity,
                                       std::vector<uint64_t>* buffer)
    : min_key_(min_key), capacity_(capacity), buffer_(buffer) {
  buffer_->resize(capacity + kScanBlock);
}

void CandidateCollector::Scan(const float* data, int64_t begin, int64_t end) {
  if (overflow_) return;
  if (written_ > capacity_) {
    overflow_ = true;
    return;
  }
  uint64_t* slots = buffer_->data();
  // Keys are below 2^31, so a signed compare is exact and vectorises.
  const int32_t min_key = static_cast<int32_t>(min_key_);
  int64_t written = written_;
  for (int64_t group = begin; group < end; group += kGroup) {
    const int64_t group_end = std::min(end, group + kGroup);
    uint32_t any = 0;
    for (int64_t i = group; i < group_end; ++i) {
      any |= static_cast<int32_t>(MagnitudeKey(data[i])) >= min_key;
    }
    if (any == 0) continue;
    // Branch-free: the slot is always written and kept only when the entry
    // qualifies, so the speed does not depend on the data.
    for (int64_t i = group; i < group_end; ++i) {
      const uint32_t key = MagnitudeKey(data[i]);
      slots[written] = RankKey(key, static_cast<uint32_t>(i));
      written += static_cast<int32_t>(key) >= min_key;
    }
  }
  written_ = written;
}

bool CandidateCollector::Finish() {
  if (written_ > capacity_) overflow_ = true;
  if (overflow_) return false;
  buffer_->resize(written_);
  return true;
}

void SelectAmongCandidates(absl::Span<const uint64_t> candidates, int64_t k,
                           std::vector<uint64_t>* ranked,
                           std::vector<uint32_t>* indices) {
  indices->resize(k);
  if (static_cast<int64_t>(candidates.size()) == k) {
    for (int64_t j = 0; j < k; ++j) (*indices)[j] = IndexOfRankKey(candidates[j]);
    return;
  }
  // Rank keys are unique (they hold the index), so the k-th largest is
  // unique and the answer does not depend on nth_element's implementation.
  ranked->assign(candidates.begin(), candidates.end());
  std::nth_element(ranked->begin(), ranked->begin() + (k - 1), ranked->end(),
                   std::greater<uint64_t>());
  const uint64_t last_taken = (*ranked)[k - 1];
  size_t taken = 0;
  for (uint64_t candidate : candidates) {
    if (candidate >= last_taken) (*indices)[taken++] = IndexOfRankKey(candidate);
  }
}

}  // namespace entrograd
