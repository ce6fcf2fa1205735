// The rate of an emulated network link, as given on a command line
// ("1gbit", "unlimited") and in bits per second. Pure values and
// functions: thread-safe.
#ifndef ENTROGRAD_WORKERS_LINK_EMULATION_LINK_RATE_H_
#define ENTROGRAD_WORKERS_LINK_EMULATION_LINK_RATE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace entrograd::link_emulation {

struct LinkRate {
  // 0: unlimited (no tbf qdisc at all).
  int64_t bits_per_second = 0;
  // As given, e.g. "1gbit"; for messages and the counters file.
  std::string text;

  bool unlimited() const { return bits_per_second == 0; }
};

// "unlimited", or a positive number (digits, optionally a fraction) followed
// by kbit, mbit or gbit, decimal units as tc counts them: "100mbit",
// "1gbit", "2.5gbit", "10gbit". Units are case-insensitive. At most
// 1000gbit. INVALID_ARGUMENT naming `text` and the accepted forms.
absl::StatusOr<LinkRate> ParseLinkRate(absl::string_view text);

}  // namespace entrograd::link_emulation

#endif  // ENTROGRAD_WORKERS_LINK_EMULATION_LINK_RATE_H_
