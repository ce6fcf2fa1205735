#include "core/interval_sums.h"

#include "entrograd/entropy.h"

namespace entrograd {

void IntervalAbsSums(absl::Span<const float> x, absl::Span<double> sums) {
  const int64_t n = static_cast<int64_t>(x.size());
  const int64_t m = static_cast<int64_t>(sums.size());
  for (int64_t i = 0; i < m; ++i) {
    const int64_t begin = IntervalBegin(i, n, m);
    const int64_t end = IntervalBegin(i + 1, n, m);
    double lanes[kSumLanes] = {};
    AccumulateAbs(x.data() + begin, end - begin, lanes);
    sums[i] = SumLanes(lanes);
  }
}

}  // namespace entrograd
