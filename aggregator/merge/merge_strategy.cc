// ChooseMergeStrategy: the one place the merge strategy is picked.

#include <cstdint>

#include "aggregator/merge/sparse_merge.h"

namespace entrograd::aggregator {

// BlockedAccumulate costs about one scatter-add per input pair plus a scan
// of numel / 64 bitmap words; KWayMerge costs a heap pop and push per pair,
// several times the scatter-add, but nothing per element of numel. So the
// heap wins only when the whole round carries very few pairs per bitmap
// word. Thresholds from bench/merge_bench.cc (see docs/BENCHMARKS.md).
MergeStrategy ChooseMergeStrategy(uint64_t numel, uint64_t total_nonzeros,
                                  int world_size) {
  (void)world_size;  // the heap's log W factor is folded into the threshold
  if (total_nonzeros * 64 < numel / 64) return MergeStrategy::kKWayMerge;
  // Under 2 input pairs per bitmap word (e.g. W=16 at 0.1% per rank: 1.0,
  // W=4 at 0.1%: 0.26), the default's per-run checks and branchy emit
  // dominate; SmallBlockAccumulate measured 226 vs 150 M pairs/s (W=16) and
  // 217 vs 197 (W=4) at numel 25M. At 1% the results were mixed (W=4, 2.6
  // pairs/word: 200 vs 209; W=16: 180-236 vs 222 across runs), so the
  // default keeps the denser rounds. A dense rank alone carries 64 pairs
  // per word, so rounds with one never get here.
  if (total_nonzeros * 32 < numel) return MergeStrategy::kSmallBlockAccumulate;
  return MergeStrategy::kBlockedAccumulate;
}

}  // namespace entrograd::aggregator
