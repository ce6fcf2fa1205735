#include "entrograd/keep_count.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "entrograd/common/status_macros.h"

namespace entrograd {

int64_t RoundAndClamp(double x, int64_t lo, int64_t hi) {
  // std::round is half away from zero, as ALGORITHM.md 5.4 asks.
  const double rounded = std::round(x);
  if (!(rounded >= static_cast<double>(lo))) return lo;  // also NaN
  if (rounded >= static_cast<double>(hi)) return hi;
  return static_cast<int64_t>(rounded);
}

absl::StatusOr<KeepDecision> DecideKeepCount(const EntropyStats& stats,
                                             int64_t numel, int64_t step,
                                             const CompressionOptions& options) {
  ENTROGRAD_RETURN_IF_ERROR(ValidateCompressionOptions(options));
  if (numel < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("numel = ", numel, "; expected >= 1"));
  }
  KeepDecision decision;
  if (IsSentWhole(numel, options)) {
    decision.k = numel;
    decision.keep_ratio = 1.0;
    decision.dense = true;
    return decision;
  }
  if (stats.all_zero) {
    // Nothing to send; the residual update still runs (ALGORITHM.md 5.2).
    decision.k = 0;
    decision.keep_ratio = 0.0;
    return decision;
  }
  const double density = WarmupDensity(options.rho, options.warmup_steps, step);
  switch (options.policy) {
    case KeepPolicy::kEntropy: {
      const double ratio = std::clamp(density * stats.effective_fraction,
                                      options.min_keep_ratio, 1.0);
      decision.keep_ratio = ratio;
      decision.k = RoundAndClamp(ratio * static_cast<double>(numel), 1, numel);
      break;
    }
    case KeepPolicy::kTopK:
      decision.keep_ratio = density;
      decision.k = RoundAndClamp(density * static_cast<double>(numel), 1, numel);
      break;
    case KeepPolicy::kThreshold:
      decision.k = -1;
      decision.keep_ratio = -1.0;
      return decision;
    case KeepPolicy::kEntropyBudget:
      return absl::FailedPreconditionError(
          "the entropy_budget policy needs every layer's entropy; use "
          "BudgetKeepCounts");
    case KeepPolicy::kDense:
      break;  // handled above
  }
  decision.dense = decision.k == numel;
  return decision;
}

absl::StatusOr<std::vector<int64_t>> BudgetKeepCounts(
    absl::Span<const BudgetLayer> layers, double density) {
  if (!(density > 0.0 && density <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "budget density = ", density, "; expected 0 < density <= 1"));
  }
  double total_numel = 0.0;
  double total_weight = 0.0;
  for (size_t l = 0; l < layers.size(); ++l) {
    const BudgetLayer& layer = layers[l];
    if (layer.numel < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("layer ", l, ": numel = ", layer.numel, "; expected >= 1"));
    }
    if (!(layer.effective_fraction > 0.0 && layer.effective_fraction <= 1.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("layer ", l, ": effective_fraction = ",
                       layer.effective_fraction, "; expected 0 < f <= 1"));
    }
    total_numel += static_cast<double>(layer.numel);
    if (!layer.all_zero) {
      total_weight +=
          static_cast<double>(layer.numel) * layer.effective_fraction;
    }
  }
  std::vector<int64_t> keep(layers.size(), 0);
  if (total_weight == 0.0) return keep;
  const double budget = density * total_numel;
  for (size_t l = 0; l < layers.size(); ++l) {
    const BudgetLayer& layer = layers[l];
    if (layer.all_zero) continue;
    const double weight =
        static_cast<double>(layer.numel) * layer.effective_fraction;
    keep[l] = RoundAndClamp(budget * weight / total_weight, 1, layer.numel);
  }
  return keep;
}

}  // namespace entrograd
