// Random rounds and an independent reference merge for the merge tests.
#ifndef ENTROGRAD_TESTS_AGGREGATOR_MERGE_MERGE_TEST_UTIL_H_
#define ENTROGRAD_TESTS_AGGREGATOR_MERGE_MERGE_TEST_UTIL_H_

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "absl/base/casts.h"
#include "aggregator/merge/sparse_merge.h"

namespace entrograd::aggregator::testing {

// One rank's contribution, owned, plus its dense picture: `present[i]` says
// whether the rank carries i and `dense_values[i]` its value there.
struct OwnedContribution {
  bool dense = false;
  std::vector<uint32_t> indices;
  std::vector<float> values;
  std::vector<bool> present;
  std::vector<float> dense_values;

  RankContribution View() const {
    return dense ? RankContribution::Dense(values)
                 : RankContribution::Sparse(indices, values);
  }
};

struct Round {
  uint64_t numel = 0;
  std::vector<OwnedContribution> ranks;

  std::vector<RankContribution> Views() const {
    std::vector<RankContribution> views;
    for (const OwnedContribution& rank : ranks) views.push_back(rank.View());
    return views;
  }
};

// The IEEE bit patterns of `values`: merges are compared bitwise.
inline std::vector<uint32_t> BitsOf(const std::vector<float>& values) {
  std::vector<uint32_t> bits;
  for (float value : values) bits.push_back(absl::bit_cast<uint32_t>(value));
  return bits;
}

// Heavy-tailed magnitudes (log-normal over ~10 decades) with random sign,
// sometimes exact small integers so that ranks cancel to 0, sometimes +0.0
// or -0.0 when `signed_zeros`.
inline float RandomValue(std::mt19937_64& rng, bool signed_zeros) {
  std::uniform_int_distribution<int> kind(0, 19);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int k = kind(rng);
  if (signed_zeros && k == 0) return 0.0f;
  if (signed_zeros && k == 1) return -0.0f;
  if (k <= 4) return static_cast<float>(static_cast<int>(rng() % 7) - 3);
  return normal(rng) * std::exp(5.0f * normal(rng));
}

// A random round: each rank gets its own density (empty, tiny, half, full),
// overlapping index sets by construction; with `allow_dense` some ranks are
// dense (carrying their elements that are not +0.0).
inline Round RandomRound(uint64_t numel, int world_size, uint64_t seed,
                         bool allow_dense, bool signed_zeros) {
  std::mt19937_64 rng(seed);
  const double densities[] = {0.0, 0.001, 0.01, 0.1, 0.5, 0.95, 1.0};
  Round round;
  round.numel = numel;
  for (int r = 0; r < world_size; ++r) {
    OwnedContribution c;
    c.present.assign(numel, false);
    c.dense_values.assign(numel, 0.0f);
    const double density = densities[rng() % 7];
    std::bernoulli_distribution pick(density);
    for (uint64_t i = 0; i < numel; ++i) {
      if (!pick(rng)) continue;
      c.indices.push_back(static_cast<uint32_t>(i));
      c.values.push_back(RandomValue(rng, signed_zeros));
    }
    c.dense = allow_dense && rng() % 4 == 0;
    for (size_t j = 0; j < c.indices.size(); ++j) {
      c.dense_values[c.indices[j]] = c.values[j];
      // A dense rank cannot tell an explicit +0.0 from an absent element.
      c.present[c.indices[j]] =
          !c.dense || absl::bit_cast<uint32_t>(c.values[j]) != 0;
    }
    if (c.dense) {
      c.indices.clear();
      c.values = c.dense_values;
    }
    round.ranks.push_back(std::move(c));
  }
  return round;
}

// The definition, element by element: ranks in order, the first carried
// value assigned, later ones added, then / float(W).
inline MergedUpdate ReferenceMerge(const Round& round) {
  MergedUpdate merged;
  merged.numel = round.numel;
  const float divisor = static_cast<float>(round.ranks.size());
  for (uint64_t i = 0; i < round.numel; ++i) {
    bool carried = false;
    float sum = 0.0f;
    for (const OwnedContribution& rank : round.ranks) {
      if (!rank.present[i]) continue;
      sum = carried ? sum + rank.dense_values[i] : rank.dense_values[i];
      carried = true;
    }
    if (!carried) continue;
    merged.indices.push_back(static_cast<uint32_t>(i));
    merged.values.push_back(sum / divisor);
  }
  return merged;
}

}  // namespace entrograd::aggregator::testing

#endif  // ENTROGRAD_TESTS_AGGREGATOR_MERGE_MERGE_TEST_UTIL_H_
