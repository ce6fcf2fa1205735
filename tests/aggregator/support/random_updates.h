// Deterministic random contributions for the aggregator and client tests:
// distinct ascending indices and heavy-tailed values from one seeded
// std::mt19937, so the same seed gives the same update on every run.
#ifndef ENTROGRAD_TESTS_AGGREGATOR_SUPPORT_RANDOM_UPDATES_H_
#define ENTROGRAD_TESTS_AGGREGATOR_SUPPORT_RANDOM_UPDATES_H_

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "aggregator/support/sparse_vector.h"

namespace entrograd::testing {

// min(count, numel) distinct indices below `numel`, ascending: 0..numel-1
// shuffled with `rng`, cut to that length and sorted.
std::vector<uint32_t> RandomIndices(uint64_t numel, size_t count,
                                    std::mt19937& rng);

// `count` values 1e-3 * t, t drawn from Student's t with 2 degrees of
// freedom (both signs, magnitudes over several decades), never zero: an
// exact 0 drawn becomes 1e-7. A dense contribution of them therefore
// carries every element.
std::vector<float> HeavyTailedValues(size_t count, std::mt19937& rng);

// A contribution of `numel` elements carrying RandomIndices(numel, count)
// with HeavyTailedValues, both drawn from `rng` in that order.
SparseVector RandomSparse(uint64_t numel, size_t count, std::mt19937& rng);

// The same from a fresh std::mt19937 seeded with `seed`.
SparseVector RandomSparse(uint64_t numel, size_t count, uint32_t seed);

}  // namespace entrograd::testing

#endif  // ENTROGRAD_TESTS_AGGREGATOR_SUPPORT_RANDOM_UPDATES_H_
