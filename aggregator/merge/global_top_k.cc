#include "aggregator/merge/global_top_k.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace entrograd::aggregator {

uint64_t GlobalKeepCount(double factor, uint64_t largest_count) {
  if (factor == 0.0) return std::numeric_limits<uint64_t>::max();
  // factor <= 1e6 and largest_count < 2^32: the product is far below 2^63.
  return static_cast<uint64_t>(
      std::ceil(factor * static_cast<double>(largest_count)));
}

bool KeepLargestMerged(uint64_t keep, MergedUpdate* merged) {
  const size_t count = merged->indices.size();
  if (count <= keep) return false;
  // Positions into the merged arrays; the first `keep` after nth_element
  // are the kept ones. Larger |value| first, then the smaller index: a total
  // order, so the kept set does not depend on the algorithm's internals.
  std::vector<uint32_t> order(count);
  for (size_t j = 0; j < count; ++j) order[j] = static_cast<uint32_t>(j);
  const std::vector<float>& values = merged->values;
  auto larger = [&values](uint32_t a, uint32_t b) {
    const float magnitude_a = std::fabs(values[a]);
    const float magnitude_b = std::fabs(values[b]);
    if (magnitude_a != magnitude_b) return magnitude_a > magnitude_b;
    return a < b;  // positions ascend with the indices
  };
  std::nth_element(order.begin(), order.begin() + keep, order.end(), larger);
  order.resize(keep);
  std::sort(order.begin(), order.end());
  for (size_t j = 0; j < order.size(); ++j) {
    merged->indices[j] = merged->indices[order[j]];
    merged->values[j] = merged->values[order[j]];
  }
  merged->indices.resize(order.size());
  merged->values.resize(order.size());
  return true;
}

}  // namespace entrograd::aggregator
