// k-way merge through a binary min-heap of (index << 32 | rank) keys: one
// integer compare orders by index and, for equal indices, by rank, so each
// index's sum is built in ascending rank order.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "aggregator/merge/float_bits.h"
#include "aggregator/merge/merge_strategies.h"
#include "aggregator/merge/merged_sum.h"
#include "aggregator/merge/sparse_merge.h"

namespace entrograd::aggregator::merge_internal {
namespace {

// Position of rank `c`'s next carried pair at or after `position`, or its
// size when none is left. Dense ranks skip their +0.0 elements.
size_t NextCarried(const RankContribution& c, size_t position) {
  if (c.dense) {
    while (position < c.values.size() && IsPositiveZero(c.values[position])) {
      ++position;
    }
  }
  return position;
}

uint32_t IndexAt(const RankContribution& c, size_t position) {
  return c.dense ? static_cast<uint32_t>(position) : c.indices[position];
}

}  // namespace

absl::Status KWayMerge(uint64_t numel,
                       absl::Span<const RankContribution> contributions,
                       uint64_t max_output, MergedUpdate* out) {
  (void)numel;  // validated already; indices are < numel
  out->indices.clear();
  out->values.clear();
  out->indices.reserve(max_output);
  out->values.reserve(max_output);

  std::vector<size_t> cursor(contributions.size());
  std::vector<uint64_t> heap;
  heap.reserve(contributions.size());
  for (size_t rank = 0; rank < contributions.size(); ++rank) {
    cursor[rank] = NextCarried(contributions[rank], 0);
    if (cursor[rank] < contributions[rank].values.size()) {
      heap.push_back(
          uint64_t{IndexAt(contributions[rank], cursor[rank])} << 32 | rank);
    }
  }
  std::make_heap(heap.begin(), heap.end(), std::greater<>());

  const float divisor = static_cast<float>(contributions.size());
  while (!heap.empty()) {
    const uint32_t index = static_cast<uint32_t>(heap.front() >> 32);
    float sum = kEmptySum;
    // Pops come out in (index, rank) order: all ranks carrying `index`,
    // lowest rank first.
    while (!heap.empty() &&
           static_cast<uint32_t>(heap.front() >> 32) == index) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      const size_t rank = static_cast<uint32_t>(heap.back());
      heap.pop_back();
      const RankContribution& c = contributions[rank];
      sum += c.values[cursor[rank]];
      cursor[rank] = NextCarried(c, cursor[rank] + 1);
      if (cursor[rank] < c.values.size()) {
        heap.push_back(uint64_t{IndexAt(c, cursor[rank])} << 32 | rank);
        std::push_heap(heap.begin(), heap.end(), std::greater<>());
      }
    }
    if (IsNonFinite(sum)) return SumOverflowError(index);
    out->indices.push_back(index);
    out->values.push_back(sum / divisor);
  }
  return absl::OkStatus();
}

}  // namespace entrograd::aggregator::merge_internal
