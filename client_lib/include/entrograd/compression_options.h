// Options of the compression core (ALGORITHM.md 5.1-5.6): which keep-count
// policy turns a layer's gradient entropy into the number of entries sent,
// and its parameters.
//
// Thread safety: plain value types; the functions are pure.
#ifndef ENTROGRAD_COMPRESSION_OPTIONS_H_
#define ENTROGRAD_COMPRESSION_OPTIONS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace entrograd {

// How many entries of a layer are sent (ALGORITHM.md 5.4).
enum class KeepPolicy {
  // r = clamp(rho * f, min_keep_ratio, 1) with f = exp(H) / m the layer's
  // effective fraction; k = clamp(round(r * n), 1, n). The default.
  kEntropy,
  // A global density over all compressed layers of a step, shared in
  // proportion to n * f. Needs every layer's entropy before any layer can be
  // selected, so sending cannot overlap the backward pass.
  kEntropyBudget,
  // Fixed proportion, the baseline the patent argues against:
  // k = clamp(round(rho * n), 1, n).
  kTopK,
  // Constant threshold baseline: every entry with |A| >= threshold.
  kThreshold,
  // Everything (k = n): the uncompressed baseline.
  kDense,
};

// "entropy", "entropy_budget", "topk", "threshold", "dense".
absl::string_view KeepPolicyName(KeepPolicy policy);
// Inverse of KeepPolicyName. INVALID_ARGUMENT naming the accepted names.
absl::StatusOr<KeepPolicy> ParseKeepPolicy(absl::string_view name);

// What a layer's entropy is measured over (ALGORITHM.md 5.2).
enum class EntropySource {
  // The fresh gradient u (the patent's step 52). The default.
  kGradient,
  // The accumulated gradient A (residual plus u, or plus the velocity under
  // momentum correction): what the selection ranks, so the share follows
  // where the mass to be sent lies now, including what earlier steps held
  // back. A variant under measurement (docs/BENCHMARKS.md); a layer sent
  // whole has A = u, so it changes nothing there.
  kAccumulated,
};

// "gradient", "accumulated".
absl::string_view EntropySourceName(EntropySource source);
// Inverse of EntropySourceName. INVALID_ARGUMENT naming the accepted names.
absl::StatusOr<EntropySource> ParseEntropySource(absl::string_view name);

struct CompressionOptions {
  KeepPolicy policy = KeepPolicy::kEntropy;

  // What the entropy of kEntropy and kEntropyBudget is measured over.
  EntropySource entropy_of = EntropySource::kGradient;

  // Density (fraction of entries, 0 < rho <= 1) that a layer of maximal
  // entropy gets under kEntropy, and the fixed density of kTopK.
  double rho = 0.01;

  // Lower bound on the keep ratio under kEntropy, in [0, 1] (useful values
  // lie below rho). Default 0.
  double min_keep_ratio = 0.0;

  // H >= 1: under kEntropy, each layer's effective fraction f is taken at
  // the first step of every window of H steps and held for the rest of the
  // window (entrograd/held_share.h). 1 (the default) takes it every step.
  // A variant under measurement (docs/BENCHMARKS.md); other policies accept
  // only 1.
  int64_t share_hold_steps = 1;

  // Global density D (0 < D <= 1) under kEntropyBudget.
  double budget_density = 0.001;

  // Magnitude threshold tau (>= 0, finite) under kThreshold.
  double threshold = 1e-3;

  // Maximum number of entropy intervals M (>= 1); a layer of n elements uses
  // m = min(M, n). Default 256 as in the patent's evaluation.
  int64_t intervals = 256;

  // Layers with fewer elements than this (biases, norms) are sent dense
  // whatever the policy (see IsSentWhole). 0 disables. Default 1024.
  int64_t dense_below = 1024;

  // Warm-up steps T_w (DGC): for step t < T_w the density is
  // rho^((t+1)/T_w) instead of rho (kEntropy, kTopK and kEntropyBudget's D).
  // 0 disables. Default 0.
  int64_t warmup_steps = 0;

  // Momentum correction (ALGORITHM.md 5.1, 5.6): accumulate a local velocity
  // V <- momentum * V + u and compress G + V; selected entries of V are
  // masked to zero. Use it when the training optimiser uses momentum, and
  // step with plain SGD on the merged update. Layers sent whole (IsSentWhole)
  // take no part: they send u itself and take ordinary momentum SGD on the
  // merged update instead (ALGORITHM.md 7), since masking V at every entry
  // every step would erase their momentum.
  bool momentum_correction = false;
  // Momentum factor mu in [0, 1), used when momentum_correction is true.
  double momentum = 0.9;
};

// OK, or INVALID_ARGUMENT naming the first field out of range and its value.
absl::Status ValidateCompressionOptions(const CompressionOptions& options);

// True when a layer of `numel` elements is sent whole every step: under
// kDense, or when numel < dense_below. Such a layer keeps no residual and no
// velocity: it sends its fresh gradient u exactly (ALGORITHM.md 5.1).
bool IsSentWhole(int64_t numel, const CompressionOptions& options);

// Density used at `step` (>= 0) for a nominal density `rho`: rho itself, or
// the warm-up value rho^((step+1)/warmup_steps) while step < warmup_steps.
double WarmupDensity(double rho, int64_t warmup_steps, int64_t step);

}  // namespace entrograd

#endif  // ENTROGRAD_COMPRESSION_OPTIONS_H_
