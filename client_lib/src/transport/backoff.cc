#include "transport/backoff.h"

#include <algorithm>

namespace entrograd {

absl::Duration JitteredDelay(const BackoffPolicy& policy, int attempt,
                             std::mt19937_64& rng) {
  const absl::Duration cap = std::max(policy.initial, policy.max);
  absl::Duration delay = policy.initial;
  for (int i = 0; i < attempt && delay < cap; ++i) delay *= 2;
  delay = std::min(delay, cap);
  if (policy.jitter > 0) {
    std::uniform_real_distribution<double> factor(1.0 - policy.jitter,
                                                  1.0 + policy.jitter);
    delay = delay * factor(rng);
  }
  return delay;
}

}  // namespace entrograd
