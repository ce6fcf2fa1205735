// The fused first pass of LayerCompressor (ALGORITHM.md 5.1-5.3): one read
// of u, G (and V) computes A and the per-interval sums of |u| (or |A|) for
// the entropy. Private to the core.
#ifndef ENTROGRAD_CORE_ACCUMULATE_H_
#define ENTROGRAD_CORE_ACCUMULATE_H_

#include <cstdint>

#include "absl/types/span.h"
#include "core/candidate_select.h"

namespace entrograd {

// The arithmetic of ALGORITHM.md 5.1, in one place so that the pass and the
// candidate sampling compute bitwise the same A (the core is built with
// -ffp-contract=off, so no FMA contraction changes it either).
inline float NextVelocity(float momentum, float velocity, float gradient) {
  return momentum * velocity + gradient;
}
inline float Accumulated(float residual, float increment) {
  return residual + increment;
}

struct AccumulateBuffers {
  absl::Span<const float> gradient;  // u, n elements
  // G, n elements, or empty: a layer sent whole, for which A = u exactly
  // (ALGORITHM.md 5.1; not 0 + u, which would turn -0.0 into +0.0). The
  // velocity must then be empty too.
  absl::Span<const float> residual;
  absl::Span<const float> velocity;  // V, n elements, or empty: no momentum
  absl::Span<float> accumulated;     // out: A = G + u (or G + V'), n elements
  absl::Span<float> next_velocity;   // out: V' = mu V + u; empty: no momentum
  absl::Span<double> interval_abs_sums;  // out: m sums of |u| (or |A|)
  // The sums are of |A| instead of |u| (EntropySource::kAccumulated).
  bool measure_accumulated = false;
  CandidateCollector* candidates = nullptr;  // optional: fed every block of A
};

// Fills the outputs. A non-finite u makes its interval's sum non-finite;
// finite u, G and V can still overflow A or V' to +-Inf (never NaN), which
// makes the sum non-finite too when it is of |A|. The caller checks both.
void AccumulateAndMeasure(const AccumulateBuffers& buffers, float momentum);

}  // namespace entrograd

#endif  // ENTROGRAD_CORE_ACCUMULATE_H_
