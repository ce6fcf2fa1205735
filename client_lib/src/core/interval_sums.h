// Per-interval sums of |x| and the shared non-finite error. Private to the
// compression core.
#ifndef ENTROGRAD_CORE_INTERVAL_SUMS_H_
#define ENTROGRAD_CORE_INTERVAL_SUMS_H_

#include <cmath>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace entrograd {

// Indices travel as uint32 (entrograd.v1), so a layer has at most 2^32 - 1
// elements.
inline constexpr uint64_t kMaxLayerElements = 0xFFFFFFFFull;

// Number of independent double accumulators: a fixed lane count gives the
// compiler a vectorisable loop while the summation order, and so the result,
// stays the same on every machine and every run.
inline constexpr int kSumLanes = 8;

// Adds |x| of `block` into the lane accumulators, element j into lane
// j % kSumLanes (j counted from the start of the block).
inline void AccumulateAbs(const float* block, int64_t length,
                          double (&lanes)[kSumLanes]) {
  int64_t j = 0;
  for (; j + kSumLanes <= length; j += kSumLanes) {
    for (int lane = 0; lane < kSumLanes; ++lane) {
      lanes[lane] += std::fabs(static_cast<double>(block[j + lane]));
    }
  }
  for (int lane = 0; j < length; ++j, ++lane) {
    lanes[lane] += std::fabs(static_cast<double>(block[j]));
  }
}

// Folds the lanes in a fixed order.
inline double SumLanes(const double (&lanes)[kSumLanes]) {
  double total = 0.0;
  for (double lane : lanes) total += lane;
  return total;
}

// sums[i] = sum of |x| over interval i of x split into sums.size() intervals
// (see IntervalBegin). Non-finite input makes the affected sum non-finite:
// callers check the sums instead of every element.
void IntervalAbsSums(absl::Span<const float> x, absl::Span<double> sums);

// INVALID_ARGUMENT naming the first non-finite element of what[begin, end).
inline absl::Status NonFiniteError(absl::string_view what,
                                   absl::Span<const float> x, int64_t begin,
                                   int64_t end) {
  for (int64_t j = begin; j < end; ++j) {
    if (!std::isfinite(x[j])) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " holds a non-finite value (", x[j], ") at element ", j));
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat(what, " holds a non-finite value in elements [", begin, ", ",
                   end, ")"));
}

}  // namespace entrograd

#endif  // ENTROGRAD_CORE_INTERVAL_SUMS_H_
