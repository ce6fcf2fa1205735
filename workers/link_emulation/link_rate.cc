#include "workers/link_emulation/link_rate.h"

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace entrograd::link_emulation {

namespace {

constexpr double kMaxBitsPerSecond = 1e12;  // 1000gbit

struct Unit {
  absl::string_view suffix;
  double bits;
};
constexpr Unit kUnits[] = {{"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}};

absl::Status Invalid(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "link rate \"", text, "\" ", why,
      "; use \"unlimited\" or a number with kbit, mbit or gbit (e.g. "
      "\"100mbit\", \"1gbit\", \"2.5gbit\", \"10gbit\")"));
}

// Digits with at most one '.' between digits: no sign, exponent, "inf" or
// spaces, which SimpleAtod alone would accept.
bool IsPlainDecimal(absl::string_view number) {
  const size_t dot = number.find('.');
  const absl::string_view whole = number.substr(0, dot);
  const absl::string_view fraction =
      dot == absl::string_view::npos ? "0" : number.substr(dot + 1);
  auto all_digits = [](absl::string_view part) {
    if (part.empty()) return false;
    for (char c : part) {
      if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
    }
    return true;
  };
  return all_digits(whole) && all_digits(fraction);
}

}  // namespace

absl::StatusOr<LinkRate> ParseLinkRate(absl::string_view text) {
  const std::string lower = absl::AsciiStrToLower(text);
  if (lower == "unlimited") return LinkRate{0, std::string(text)};
  for (const Unit& unit : kUnits) {
    if (!absl::EndsWith(lower, unit.suffix)) continue;
    const absl::string_view number =
        absl::string_view(lower).substr(0, lower.size() - unit.suffix.size());
    double value = 0;
    if (!IsPlainDecimal(number) || !absl::SimpleAtod(number, &value)) {
      return Invalid(text, "is not a number with a unit");
    }
    const double bits = std::round(value * unit.bits);
    if (bits < 1) return Invalid(text, "is zero (no traffic would pass)");
    if (bits > kMaxBitsPerSecond) return Invalid(text, "is above 1000gbit");
    return LinkRate{static_cast<int64_t>(bits), std::string(text)};
  }
  return Invalid(text, "has no unit");
}

}  // namespace entrograd::link_emulation
