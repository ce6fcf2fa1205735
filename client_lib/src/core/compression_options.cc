#include "entrograd/compression_options.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace entrograd {

namespace {

struct PolicyName {
  KeepPolicy policy;
  absl::string_view name;
};

constexpr PolicyName kPolicyNames[] = {
    {KeepPolicy::kEntropy, "entropy"},
    {KeepPolicy::kEntropyBudget, "entropy_budget"},
    {KeepPolicy::kTopK, "topk"},
    {KeepPolicy::kThreshold, "threshold"},
    {KeepPolicy::kDense, "dense"},
};

struct SourceName {
  EntropySource source;
  absl::string_view name;
};

constexpr SourceName kSourceNames[] = {
    {EntropySource::kGradient, "gradient"},
    {EntropySource::kAccumulated, "accumulated"},
};

absl::Status OutOfRange(absl::string_view field, double value,
                        absl::string_view allowed) {
  return absl::InvalidArgumentError(absl::StrCat(
      "CompressionOptions.", field, " = ", value, " is out of range; ", allowed));
}

}  // namespace

absl::string_view KeepPolicyName(KeepPolicy policy) {
  for (const PolicyName& entry : kPolicyNames) {
    if (entry.policy == policy) return entry.name;
  }
  return "unknown";
}

absl::StatusOr<KeepPolicy> ParseKeepPolicy(absl::string_view name) {
  for (const PolicyName& entry : kPolicyNames) {
    if (entry.name == name) return entry.policy;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown keep policy \"", name,
      "\"; expected one of entropy, entropy_budget, topk, threshold, dense"));
}

absl::string_view EntropySourceName(EntropySource source) {
  for (const SourceName& entry : kSourceNames) {
    if (entry.source == source) return entry.name;
  }
  return "unknown";
}

absl::StatusOr<EntropySource> ParseEntropySource(absl::string_view name) {
  for (const SourceName& entry : kSourceNames) {
    if (entry.name == name) return entry.source;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown entropy source \"", name,
                   "\"; expected gradient or accumulated"));
}

absl::Status ValidateCompressionOptions(const CompressionOptions& options) {
  if (KeepPolicyName(options.policy) == "unknown") {
    return absl::InvalidArgumentError(
        absl::StrCat("CompressionOptions.policy = ",
                     static_cast<int>(options.policy), " is not a KeepPolicy"));
  }
  if (EntropySourceName(options.entropy_of) == "unknown") {
    return absl::InvalidArgumentError(absl::StrCat(
        "CompressionOptions.entropy_of = ",
        static_cast<int>(options.entropy_of), " is not an EntropySource"));
  }
  // Written as !(in range) so that NaN fails every check.
  if (!(options.rho > 0.0 && options.rho <= 1.0)) {
    return OutOfRange("rho", options.rho, "expected 0 < rho <= 1");
  }
  if (!(options.min_keep_ratio >= 0.0 && options.min_keep_ratio <= 1.0)) {
    return OutOfRange("min_keep_ratio", options.min_keep_ratio,
                      "expected 0 <= min_keep_ratio <= 1");
  }
  if (options.share_hold_steps < 1) {
    return OutOfRange("share_hold_steps",
                      static_cast<double>(options.share_hold_steps),
                      "expected share_hold_steps >= 1");
  }
  if (options.share_hold_steps > 1 && options.policy != KeepPolicy::kEntropy) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CompressionOptions.share_hold_steps = ", options.share_hold_steps,
        " holds the entropy policy's share; policy ",
        KeepPolicyName(options.policy), " takes only 1"));
  }
  if (!(options.budget_density > 0.0 && options.budget_density <= 1.0)) {
    return OutOfRange("budget_density", options.budget_density,
                      "expected 0 < budget_density <= 1");
  }
  if (!(options.threshold >= 0.0 && std::isfinite(options.threshold))) {
    return OutOfRange("threshold", options.threshold,
                      "expected a finite threshold >= 0");
  }
  if (options.intervals < 1) {
    return OutOfRange("intervals", static_cast<double>(options.intervals),
                      "expected intervals >= 1");
  }
  if (options.dense_below < 0) {
    return OutOfRange("dense_below", static_cast<double>(options.dense_below),
                      "expected dense_below >= 0");
  }
  if (options.warmup_steps < 0) {
    return OutOfRange("warmup_steps", static_cast<double>(options.warmup_steps),
                      "expected warmup_steps >= 0");
  }
  if (!(options.momentum >= 0.0 && options.momentum < 1.0)) {
    return OutOfRange("momentum", options.momentum,
                      "expected 0 <= momentum < 1");
  }
  return absl::OkStatus();
}

bool IsSentWhole(int64_t numel, const CompressionOptions& options) {
  return options.policy == KeepPolicy::kDense || numel < options.dense_below;
}

double WarmupDensity(double rho, int64_t warmup_steps, int64_t step) {
  if (warmup_steps <= 0 || step >= warmup_steps || step < 0) return rho;
  // DGC's exponential warm-up: starts near 1 (dense) and reaches rho at T_w.
  return std::pow(rho, static_cast<double>(step + 1) /
                           static_cast<double>(warmup_steps));
}

}  // namespace entrograd
