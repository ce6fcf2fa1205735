// Keep-count policies (ALGORITHM.md 5.4): how many entries k of a layer of
// n elements are sent, given its entropy.
//
// Thread safety: pure functions.
#ifndef ENTROGRAD_KEEP_COUNT_H_
#define ENTROGRAD_KEEP_COUNT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "entrograd/compression_options.h"
#include "entrograd/entropy.h"

namespace entrograd {

// The decision for one layer.
struct KeepDecision {
  // Entries to send. For kThreshold, -1: the count is only known after
  // comparing every |A| with the threshold (see SelectAtLeast).
  int64_t k = 0;
  // r_l: the ratio the policy asked for (before rounding to k), or k / n.
  double keep_ratio = 0.0;
  // True when the whole layer is sent (kDense, n < dense_below, or k == n).
  bool dense = false;
};

// round(x) half away from zero, then clamped to [lo, hi].
int64_t RoundAndClamp(double x, int64_t lo, int64_t hi);

// The keep count of one layer of `numel` elements at `step` under every
// policy except kEntropyBudget (which needs all layers; use
// BudgetKeepCounts). An all-zero layer (stats.all_zero) gets k = 0.
// Errors: INVALID_ARGUMENT for numel < 1 or invalid options;
// FAILED_PRECONDITION for kEntropyBudget.
absl::StatusOr<KeepDecision> DecideKeepCount(const EntropyStats& stats,
                                             int64_t numel, int64_t step,
                                             const CompressionOptions& options);

// One compressed layer's input to the budget policy.
struct BudgetLayer {
  int64_t numel = 0;                // n_l >= 1
  double effective_fraction = 0.0;  // f_l in (0, 1]
  bool all_zero = false;            // gets k = 0
};

// kEntropyBudget: w_l = n_l * f_l, k_l = clamp(round(D * N * w_l / sum w),
// 1, n_l) with N = sum n_l over the given layers (the caller leaves out
// layers sent dense because of dense_below). All-zero layers get 0 and take
// no share. Errors: INVALID_ARGUMENT for density outside (0, 1], a layer
// with numel < 1 or f outside (0, 1].
absl::StatusOr<std::vector<int64_t>> BudgetKeepCounts(
    absl::Span<const BudgetLayer> layers, double density);

}  // namespace entrograd

#endif  // ENTROGRAD_KEEP_COUNT_H_
