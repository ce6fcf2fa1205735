// Jittered exponential backoff for reconnects and refused-update retries:
// initial, initial*2, ... capped at max, each multiplied by a uniform random
// factor in [1 - jitter, 1 + jitter] so that the workers of a job do not
// reconnect in lockstep after a shard restart.
//
// Thread safety: not thread-safe; one owner.
#ifndef ENTROGRAD_TRANSPORT_BACKOFF_H_
#define ENTROGRAD_TRANSPORT_BACKOFF_H_

#include <cstdint>
#include <random>

#include "absl/time/time.h"

namespace entrograd {

struct BackoffPolicy {
  absl::Duration initial = absl::Milliseconds(100);
  absl::Duration max = absl::Seconds(5);
  double jitter = 0.2;  // in [0, 1)
};

// The delay before retry number `attempt` (0 = the first): the policy's
// initial delay doubled `attempt` times, capped, then jittered with `rng`.
absl::Duration JitteredDelay(const BackoffPolicy& policy, int attempt,
                             std::mt19937_64& rng);

class Backoff {
 public:
  // `seed` makes the sequence reproducible.
  Backoff(BackoffPolicy policy, uint64_t seed) : policy_(policy), rng_(seed) {}

  // The next delay; grows until it reaches the cap.
  absl::Duration Next() { return JitteredDelay(policy_, attempts_++, rng_); }
  // Starts again from the initial delay.
  void Reset() { attempts_ = 0; }

 private:
  BackoffPolicy policy_;
  int attempts_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace entrograd

#endif  // ENTROGRAD_TRANSPORT_BACKOFF_H_
