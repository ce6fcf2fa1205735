// A layer's entropy share held over several steps (ALGORITHM.md 5.4,
// CompressionOptions.share_hold_steps = H > 1, the entropy policy only).
//
// The entropy policy's effective fraction f_l is taken at the first step of
// each window of H steps (window = step / H) and reused for the window's
// other steps, so that a layer's share follows its entropy over H steps
// rather than one batch's noise. The entropy is still measured, and
// reported, every step; only what the policy sees is held. A layer whose
// gradient is all zero at the window's first step takes its share at the
// next step that is not.
//
// What is held is state: a checkpoint must carry it for a resumed run to
// stay bitwise equal to an uninterrupted one (DistributedOptimizer's
// "held_share_<i>").
//
// Thread safety: a value type and pure functions.
#ifndef ENTROGRAD_HELD_SHARE_H_
#define ENTROGRAD_HELD_SHARE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "entrograd/entropy.h"

namespace entrograd {

struct HeldShare {
  // The window (step / H) the fraction was taken in; -1: nothing held.
  int64_t window = -1;
  // f_l taken then, in (0, 1].
  double effective_fraction = 0.0;
};

// The entropy the keep-count policy sees at `step` (>= 0): `measured`, with
// its effective fraction replaced by the held one when hold_steps > 1,
// `held` was taken in step's window, and `measured` is not all zero (an
// all-zero layer sends nothing, whatever was held).
EntropyStats EntropyForPolicy(const EntropyStats& measured,
                              const HeldShare& held, int64_t step,
                              int64_t hold_steps);

// What is held once the step at `step` committed with `used`
// (EntropyForPolicy's result): `held` inside its window, else `used`'s
// fraction for step's window (nothing, when `used` is all zero, or when
// hold_steps <= 1).
HeldShare HeldShareAfter(const EntropyStats& used, const HeldShare& held,
                         int64_t step, int64_t hold_steps);

// OK, or INVALID_ARGUMENT naming the field: window < -1, or a held fraction
// outside (0, 1] (or not finite).
absl::Status ValidateHeldShare(const HeldShare& held);

}  // namespace entrograd

#endif  // ENTROGRAD_HELD_SHARE_H_
