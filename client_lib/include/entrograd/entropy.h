// Interval entropy of a layer's gradient (ALGORITHM.md 5.2, 5.3; patent
// steps 52 and 53).
//
// Thread safety: pure functions.
#ifndef ENTROGRAD_ENTROPY_H_
#define ENTROGRAD_ENTROPY_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace entrograd {

// Entropy of a gradient split into m contiguous intervals.
struct EntropyStats {
  int64_t intervals = 0;            // m = min(M, n)
  double entropy = 0.0;             // H = -sum P_i ln P_i, nats, in [0, ln m]
  double normalized_entropy = 0.0;  // Hn = H / ln m; 1 when m == 1
  double effective_fraction = 0.0;  // f = exp(H) / m, in [1/m, 1]
  bool all_zero = false;            // the sum is 0: nothing to send
};

// Interval i of a vector of n elements split into m intervals covers
// [floor(i*n/m), floor((i+1)*n/m)). Requires 0 <= i <= m, 1 <= m <= n.
inline int64_t IntervalBegin(int64_t i, int64_t n, int64_t m) {
  // i*n fits in 64 bits for every n < 2^32 and m <= n.
  return static_cast<int64_t>((static_cast<unsigned __int128>(i) * n) / m);
}

// Entropy from the per-interval sums of |u| (`interval_abs_sums[i]` is the
// sum over interval i of a vector of n elements; m = its size). The means
// h_i divide by each interval's length. All-zero sums give all_zero = true,
// H = 0 and f = 1/m. Accumulates in double. Requires m >= 1, n >= m, sums
// finite and >= 0 (checked by ComputeIntervalEntropy).
EntropyStats EntropyFromIntervalSums(absl::Span<const double> interval_abs_sums,
                                     int64_t n);

// Computes the interval entropy of `gradient` with at most `max_intervals`
// intervals. Errors: INVALID_ARGUMENT when the gradient is empty, longer than
// 2^32 - 1, max_intervals < 1, or holds a NaN or Inf (message names the
// first non-finite position).
absl::StatusOr<EntropyStats> ComputeIntervalEntropy(
    absl::Span<const float> gradient, int64_t max_intervals);

}  // namespace entrograd

#endif  // ENTROGRAD_ENTROPY_H_
