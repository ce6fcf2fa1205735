// Human-readable numbers shared by the progress display, summary.md and
// the plot, so all three spell a value the same way.
#ifndef ENTROGRAD_WORKERS_LAUNCHER_FORMAT_UNITS_H_
#define ENTROGRAD_WORKERS_LAUNCHER_FORMAT_UNITS_H_

#include <cstdint>
#include <string>

namespace entrograd::launcher {

// Decimal units, three significant digits: "950 B", "12.3 kB", "4.56 GB".
std::string FormatBytes(double bytes);

// "12,345,678".
std::string FormatCount(int64_t count);

// A compression ratio: "1.02x", "93.4x", "448x"; "-" when 0 or not finite.
std::string FormatRatio(double ratio);

// A fraction as a percentage with two decimals: 0.8512 -> "85.12%".
std::string FormatPercent(double fraction);

// A loss: four significant digits ("0.4123", "2.303"), "nan", "inf".
std::string FormatLoss(double loss);

// Seconds as "2.28ms", "4.20s", "12.3s", "4m05s", "1h02m".
std::string FormatSeconds(double seconds);

}  // namespace entrograd::launcher

#endif  // ENTROGRAD_WORKERS_LAUNCHER_FORMAT_UNITS_H_
