// The fused first pass of LayerCompressor (ALGORITHM.md 5.1-5.3): one read
// of u, G (and V) computes A, the per-interval sums of |u| for the entropy,
// and the histogram of |A| for the selection. Private to the core.
#ifndef ENTROGRAD_CORE_ACCUMULATE_H_
#define ENTROGRAD_CORE_ACCUMULATE_H_

#include <cstdint>

#include "absl/types/span.h"

namespace entrograd {

struct AccumulateBuffers {
  absl::Span<const float> gradient;  // u, n elements
  absl::Span<const float> residual;  // G, n elements
  absl::Span<const float> velocity;  // V, n elements, or empty: no momentum
  absl::Span<float> accumulated;     // out: A = G + u (or G + V'), n elements
  absl::Span<float> next_velocity;   // out: V' = mu V + u; empty: no momentum
  absl::Span<double> interval_abs_sums;  // out: m sums of |u|, 1 <= m <= n
  uint32_t* histogram = nullptr;     // in/out: bucket counts of |A| added
};

// Fills the outputs. Non-finite inputs propagate into the sums and into the
// histogram's non-finite buckets; the caller checks those.
void AccumulateAndMeasure(const AccumulateBuffers& buffers, float momentum);

}  // namespace entrograd

#endif  // ENTROGRAD_CORE_ACCUMULATE_H_
