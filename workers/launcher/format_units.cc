#include "workers/launcher/format_units.h"

#include <cmath>
#include <cstdio>

#include "absl/strings/str_format.h"

namespace entrograd::launcher {

std::string FormatBytes(double bytes) {
  if (!std::isfinite(bytes)) return "-";
  static constexpr const char* kUnits[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  int unit = 0;
  double value = bytes;
  while (std::fabs(value) >= 999.5 && unit < 5) {
    value /= 1000;
    ++unit;
  }
  if (unit == 0) return absl::StrFormat("%.0f B", value);
  const int decimals = std::fabs(value) < 9.995   ? 2
                       : std::fabs(value) < 99.95 ? 1
                                                  : 0;
  return absl::StrFormat("%.*f %s", decimals, value, kUnits[unit]);
}

std::string FormatCount(int64_t count) {
  // Unsigned, so even INT64_MIN has a magnitude.
  const uint64_t magnitude = count < 0 ? 0 - static_cast<uint64_t>(count)
                                       : static_cast<uint64_t>(count);
  const std::string digits = absl::StrFormat("%d", magnitude);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return count < 0 ? "-" + out : out;
}

std::string FormatRatio(double ratio) {
  if (!std::isfinite(ratio) || ratio <= 0) return "-";
  if (ratio >= 99.95) return absl::StrFormat("%.0fx", ratio);
  if (ratio >= 9.995) return absl::StrFormat("%.1fx", ratio);
  return absl::StrFormat("%.2fx", ratio);
}

std::string FormatPercent(double fraction) {
  if (!std::isfinite(fraction)) return "-";
  return absl::StrFormat("%.2f%%", fraction * 100);
}

std::string FormatLoss(double loss) {
  if (std::isnan(loss)) return "nan";
  if (std::isinf(loss)) return loss > 0 ? "inf" : "-inf";
  return absl::StrFormat("%.4g", loss);
}

std::string FormatSeconds(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  if (seconds < 1) return absl::StrFormat("%.3gms", seconds * 1000);
  if (seconds < 10) return absl::StrFormat("%.2fs", seconds);
  if (seconds < 60) return absl::StrFormat("%.1fs", seconds);
  const int64_t whole = static_cast<int64_t>(std::llround(seconds));
  if (whole < 3600) {
    return absl::StrFormat("%dm%02ds", whole / 60, whole % 60);
  }
  return absl::StrFormat("%dh%02dm", whole / 3600, (whole % 3600) / 60);
}

}  // namespace entrograd::launcher
