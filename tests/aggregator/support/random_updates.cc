#include "aggregator/support/random_updates.h"

#include <algorithm>
#include <numeric>

namespace entrograd::testing {

std::vector<uint32_t> RandomIndices(uint64_t numel, size_t count,
                                    std::mt19937& rng) {
  std::vector<uint32_t> all(numel);
  std::iota(all.begin(), all.end(), 0u);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(std::min<uint64_t>(count, numel));
  std::sort(all.begin(), all.end());
  return all;
}

std::vector<float> HeavyTailedValues(size_t count, std::mt19937& rng) {
  std::student_t_distribution<float> heavy(2.0f);
  std::vector<float> values;
  values.reserve(count);
  for (size_t j = 0; j < count; ++j) {
    const float value = 1e-3f * heavy(rng);
    values.push_back(value == 0.0f ? 1e-7f : value);
  }
  return values;
}

SparseVector RandomSparse(uint64_t numel, size_t count, std::mt19937& rng) {
  SparseVector vector;
  vector.numel = numel;
  vector.indices = RandomIndices(numel, count, rng);
  vector.values = HeavyTailedValues(vector.indices.size(), rng);
  return vector;
}

SparseVector RandomSparse(uint64_t numel, size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  return RandomSparse(numel, count, rng);
}

}  // namespace entrograd::testing
