// ChooseMergeStrategy: the one place the merge strategy is picked.

#include <cstdint>

#include "aggregator/merge/sparse_merge.h"

namespace entrograd::aggregator {

// BlockedAccumulate costs about one scatter-add per input pair plus a scan
// of numel / 64 bitmap words; KWayMerge costs a heap pop and push per pair,
// several times the scatter-add, but nothing per element of numel. So the
// heap wins only when the whole round carries very few pairs per bitmap
// word. Threshold from bench/merge_bench.cc (see docs/BENCHMARKS.md).
MergeStrategy ChooseMergeStrategy(uint64_t numel, uint64_t total_nonzeros,
                                  int world_size) {
  (void)world_size;  // the heap's log W factor is folded into the threshold
  if (total_nonzeros * 64 < numel / 64) return MergeStrategy::kKWayMerge;
  return MergeStrategy::kBlockedAccumulate;
}

}  // namespace entrograd::aggregator
