#include "entrograd/held_share.h"

#include "absl/strings/str_cat.h"

namespace entrograd {

namespace {

bool HeldFor(const HeldShare& held, int64_t step, int64_t hold_steps) {
  return hold_steps > 1 && held.window >= 0 && held.window == step / hold_steps;
}

}  // namespace

EntropyStats EntropyForPolicy(const EntropyStats& measured,
                              const HeldShare& held, int64_t step,
                              int64_t hold_steps) {
  EntropyStats used = measured;
  if (!measured.all_zero && HeldFor(held, step, hold_steps)) {
    used.effective_fraction = held.effective_fraction;
  }
  return used;
}

HeldShare HeldShareAfter(const EntropyStats& used, const HeldShare& held,
                         int64_t step, int64_t hold_steps) {
  if (hold_steps <= 1) return HeldShare{};
  if (HeldFor(held, step, hold_steps)) return held;
  if (used.all_zero) return HeldShare{};
  return HeldShare{step / hold_steps, used.effective_fraction};
}

absl::Status ValidateHeldShare(const HeldShare& held) {
  if (held.window < -1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "held share window = ", held.window, "; expected >= -1"));
  }
  if (held.window >= 0 && !(held.effective_fraction > 0.0 &&
                            held.effective_fraction <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("held share effective_fraction = ",
                     held.effective_fraction, "; expected 0 < f <= 1"));
  }
  return absl::OkStatus();
}

}  // namespace entrograd
