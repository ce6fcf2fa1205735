#include "aggregator/support/reference_merge.h"

#include <cstdint>

namespace entrograd::testing {

SparseVector ReferenceMerge(const std::vector<SparseVector>& ranks) {
  SparseVector merged;
  if (ranks.empty()) return merged;
  merged.numel = ranks[0].numel;
  std::vector<float> sum(merged.numel, 0.0f);
  std::vector<bool> carried(merged.numel, false);
  for (const SparseVector& rank : ranks) {  // ascending rank order
    for (size_t j = 0; j < rank.indices.size(); ++j) {
      const uint32_t i = rank.indices[j];
      sum[i] = carried[i] ? sum[i] + rank.values[j] : rank.values[j];
      carried[i] = true;
    }
  }
  const float world_size = static_cast<float>(ranks.size());
  for (uint64_t i = 0; i < merged.numel; ++i) {
    if (!carried[i]) continue;
    merged.indices.push_back(static_cast<uint32_t>(i));
    merged.values.push_back(sum[i] / world_size);
  }
  return merged;
}

std::vector<float> ReferenceMergeDense(const std::vector<SparseVector>& ranks) {
  const SparseVector merged = ReferenceMerge(ranks);
  std::vector<float> dense(merged.numel, 0.0f);
  for (size_t j = 0; j < merged.indices.size(); ++j) {
    dense[merged.indices[j]] = merged.values[j];
  }
  return dense;
}

}  // namespace entrograd::testing
