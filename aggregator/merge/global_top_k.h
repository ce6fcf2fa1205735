// Global top-k (docs/ALGORITHM.md step 6, variant; gTop-k, Shi et al. 2019):
// the merged update of a round keeps only its K entries of largest
// |merged value|, so every rank receives about as many entries as it sent
// instead of the union of all ranks' entries. The ranks keep what was left
// out in their residuals (step 7), so nothing is lost; the aggregator stays
// stateless.
#ifndef ENTROGRAD_AGGREGATOR_MERGE_GLOBAL_TOP_K_H_
#define ENTROGRAD_AGGREGATOR_MERGE_GLOBAL_TOP_K_H_

#include <cstdint>

#include "aggregator/merge/sparse_merge.h"

namespace entrograd::aggregator {

// K for a round whose largest contribution carried `largest_count` entries:
// ceil(factor * largest_count), or no limit (UINT64_MAX) for factor 0.
// `factor` is 0 or in [1, 1e6] (ValidateMergedKeepFactor). Thread-safe.
uint64_t GlobalKeepCount(double factor, uint64_t largest_count);

// Keeps the `keep` entries of `*merged` with the largest |value|, ties
// broken by the smaller index, still in ascending index order; leaves it
// as it is when it has no more than `keep`. Returns whether anything was
// left out. Deterministic: a total order on (|value|, index), no threads.
// Thread-safe for distinct `merged`.
bool KeepLargestMerged(uint64_t keep, MergedUpdate* merged);

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_MERGE_GLOBAL_TOP_K_H_
