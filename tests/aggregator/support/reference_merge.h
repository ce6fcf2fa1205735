// The merge of the aggregator contract (docs/ALGORITHM.md step 6), written
// out plainly and independently of aggregator/merge, for tests to compare
// the aggregator's merged updates with, bitwise.
#ifndef ENTROGRAD_TESTS_AGGREGATOR_SUPPORT_REFERENCE_MERGE_H_
#define ENTROGRAD_TESTS_AGGREGATOR_SUPPORT_REFERENCE_MERGE_H_

#include <vector>

#include "aggregator/support/sparse_vector.h"

namespace entrograd::testing {

// ranks[r] is rank r's contribution; all have ranks[0].numel elements.
// Over the union of the ranks' indices, ascending:
//   merged[i] = (sum over ranks r ascending that carry i of value_r[i]) / W
// in float32, W = ranks.size(). The first carried value is taken as it is
// (so a lone -0.0 stays -0.0) and later ones are added to it. Empty `ranks`
// give an empty result.
SparseVector ReferenceMerge(const std::vector<SparseVector>& ranks);

// ReferenceMerge(ranks) scattered into numel floats: +0.0 where no rank
// carries an index.
std::vector<float> ReferenceMergeDense(const std::vector<SparseVector>& ranks);

}  // namespace entrograd::testing

#endif  // ENTROGRAD_TESTS_AGGREGATOR_SUPPORT_REFERENCE_MERGE_H_
