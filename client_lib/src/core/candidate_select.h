// Candidate-based exact top-k, the fast path of selection. Private to the
// compression core.
//
// An evenly spaced sample of the magnitude keys places a lower bound that
// about 1.25 k (plus slack) entries reach. One branch-free pass collects the
// candidates at or above the bound in index order; the k-th largest among
// them is then found exactly with nth_element. When the bound misses (fewer
// than k candidates, or more than the buffer holds) the caller falls back to
// the histogram path. The answer is exact either way, so it never depends on
// which path ran.
#ifndef ENTROGRAD_CORE_CANDIDATE_SELECT_H_
#define ENTROGRAD_CORE_CANDIDATE_SELECT_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "core/magnitude_key.h"
#include "entrograd/entropy.h"

namespace entrograd {

// Keys sampled to place the bound: enough for a bound within a few percent
// of its target at any k that matters, few enough that the cache misses of
// reading them stay small beside one pass over a large layer.
inline constexpr int64_t kCandidateSampleSize = int64_t{1} << 14;

// Number of samples for a layer of n elements, and the position of sample j.
inline int64_t CandidateSampleCount(int64_t n) {
  return n < kCandidateSampleSize ? n : kCandidateSampleSize;
}
inline int64_t CandidateSamplePosition(int64_t j, int64_t n) {
  return IntervalBegin(j, n, CandidateSampleCount(n));
}

// Places the bound for k of n from the sampled keys (reordered). False when
// the bound would take a large share of the layer: the histogram path is
// better there.
bool CandidateBoundFromSample(std::vector<uint32_t>* sample_keys, int64_t n,
                              int64_t k, uint32_t* min_key);

// Most candidates the fast path keeps for k of n before it gives up.
int64_t CandidateCapacity(int64_t n, int64_t k);

// The selection order as one integer: larger means taken first. Magnitude
// key in the high half, the complemented index in the low half, so equal
// magnitudes rank the smaller index first.
inline uint64_t RankKey(uint32_t magnitude_key, uint32_t index) {
  return (static_cast<uint64_t>(magnitude_key) << 32) | (0xFFFFFFFFu - index);
}
inline uint32_t IndexOfRankKey(uint64_t rank_key) {
  return 0xFFFFFFFFu - static_cast<uint32_t>(rank_key);
}
inline uint32_t MagnitudeKeyOfRankKey(uint64_t rank_key) {
  return static_cast<uint32_t>(rank_key >> 32);
}

// Collects the rank keys of entries with key >= min_key, in index order,
// into a buffer sized for `capacity` (plus one block of slack). Feed it
// consecutive ranges of the layer with Scan. Keeping the keys saves the
// later steps random reads of the (large, uncached) values.
class CandidateCollector {
 public:
  // Resizes *buffer; keeps a pointer to it until Finish.
  CandidateCollector(uint32_t min_key, int64_t capacity,
                     std::vector<uint64_t>* buffer);

  // Scans values[begin, end) (absolute indices into `data`), a range of at
  // most kScanBlock elements; ranges come in index order.
  void Scan(const float* data, int64_t begin, int64_t end);

  // Trims the buffer to the candidates. False when more than `capacity`
  // qualified (the buffer then holds an incomplete set).
  bool Finish();

  static constexpr int64_t kScanBlock = 4096;

 private:
  uint32_t min_key_;
  int64_t capacity_;
  std::vector<uint64_t>* buffer_;
  int64_t written_ = 0;
  bool overflow_ = false;
};

// From candidates (rank keys in index order, a superset of the k largest),
// writes the indices of the k largest rank keys into *indices in index
// order. Requires candidates.size() >= k >= 1. Uses *ranked as scratch.
void SelectAmongCandidates(absl::Span<const uint64_t> candidates, int64_t k,
                           std::vector<uint64_t>* ranked,
                           std::vector<uint32_t>* indices);

}  // namespace entrograd

#endif  // ENTROGRAD_CORE_CANDIDATE_SELECT_H_
