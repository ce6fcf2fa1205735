#include "entrograd/entropy.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/interval_sums.h"

namespace entrograd {

EntropyStats EntropyFromIntervalSums(absl::Span<const double> interval_abs_sums,
                                     int64_t n) {
  const int64_t m = static_cast<int64_t>(interval_abs_sums.size());
  EntropyStats stats;
  stats.intervals = m;
  // h_i are means: intervals differ in length by one, and the patent's
  // "average of the absolute values" of each interval is what P is built on.
  double total = 0.0;
  for (int64_t i = 0; i < m; ++i) {
    const double length =
        static_cast<double>(IntervalBegin(i + 1, n, m) - IntervalBegin(i, n, m));
    total += interval_abs_sums[i] / length;
  }
  if (total == 0.0) {
    stats.all_zero = true;
    stats.entropy = 0.0;
    stats.normalized_entropy = 0.0;
    stats.effective_fraction = 1.0 / static_cast<double>(m);
    return stats;
  }
  double entropy = 0.0;
  for (int64_t i = 0; i < m; ++i) {
    const double length =
        static_cast<double>(IntervalBegin(i + 1, n, m) - IntervalBegin(i, n, m));
    const double p = (interval_abs_sums[i] / length) / total;
    if (p > 0.0) entropy -= p * std::log(p);
  }
  // Rounding can push H a hair outside [0, ln m]; keep the derived values in
  // their documented ranges.
  const double max_entropy = std::log(static_cast<double>(m));
  if (entropy < 0.0) entropy = 0.0;
  if (entropy > max_entropy) entropy = max_entropy;
  stats.entropy = entropy;
  stats.normalized_entropy = m == 1 ? 1.0 : entropy / max_entropy;
  stats.effective_fraction = std::exp(entropy) / static_cast<double>(m);
  if (stats.effective_fraction > 1.0) stats.effective_fraction = 1.0;
  return stats;
}

absl::StatusOr<EntropyStats> ComputeIntervalEntropy(
    absl::Span<const float> gradient, int64_t max_intervals) {
  const int64_t n = static_cast<int64_t>(gradient.size());
  if (n == 0) return absl::InvalidArgumentError("gradient is empty");
  if (static_cast<uint64_t>(n) > kMaxLayerElements) {
    return absl::InvalidArgumentError(
        absl::StrCat("gradient has ", n, " elements; at most ",
                     kMaxLayerElements, " are supported"));
  }
  if (max_intervals < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_intervals = ", max_intervals, "; expected >= 1"));
  }
  const int64_t m = max_intervals < n ? max_intervals : n;
  std::vector<double> sums(m);
  IntervalAbsSums(gradient, absl::MakeSpan(sums));
  for (int64_t i = 0; i < m; ++i) {
    if (!std::isfinite(sums[i])) {
      return NonFiniteError("gradient", gradient, IntervalBegin(i, n, m),
                            IntervalBegin(i + 1, n, m));
    }
  }
  return EntropyFromIntervalSums(sums, n);
}

}  // namespace entrograd
