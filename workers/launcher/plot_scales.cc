#include "workers/launcher/plot_scales.h"

#include <algorithm>
#include <cmath>

namespace entrograd::launcher {

namespace {

// The 1/2/5 x 10^k step nearest above range / target.
double NiceStep(double range, int target_ticks) {
  const double rough = range / std::max(target_ticks, 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(rough)));
  const double normalized = rough / magnitude;
  double nice = 10;
  if (normalized <= 1) {
    nice = 1;
  } else if (normalized <= 2) {
    nice = 2;
  } else if (normalized <= 5) {
    nice = 5;
  }
  return nice * magnitude;
}

}  // namespace

double Axis::ToPixel(double value, double pixel_at_min,
                     double pixel_at_max) const {
  double from;
  double to;
  double at;
  if (log) {
    from = std::log10(min);
    to = std::log10(max);
    at = value > 0 ? std::log10(value) : from;
  } else {
    from = min;
    to = max;
    at = value;
  }
  const double fraction = to > from ? (at - from) / (to - from) : 0.5;
  return pixel_at_min + fraction * (pixel_at_max - pixel_at_min);
}

Axis LinearAxis(double lo, double hi, int target_ticks, bool integer_step) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) {
    lo = 0;
    hi = 1;
  }
  if (lo > hi) std::swap(lo, hi);
  if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) {
    const double pad = std::max(std::fabs(lo) * 0.1, integer_step ? 1.0 : 0.5);
    lo -= pad;
    hi += pad;
  }
  double step = NiceStep(hi - lo, target_ticks);
  if (integer_step) step = std::max(step, 1.0);
  Axis axis;
  axis.min = std::floor(lo / step + 1e-9) * step;
  axis.max = std::ceil(hi / step - 1e-9) * step;
  const int count =
      static_cast<int>(std::llround((axis.max - axis.min) / step));
  for (int i = 0; i <= count; ++i) {
    double tick = axis.min + i * step;
    if (std::fabs(tick) < step * 1e-9) tick = 0;  // no "-0"
    axis.ticks.push_back(tick);
  }
  return axis;
}

Axis LogAxis(double lo, double hi) {
  if (!(lo > 0) || !std::isfinite(lo)) lo = 1;
  if (!(hi > 0) || !std::isfinite(hi)) hi = lo;
  if (lo > hi) std::swap(lo, hi);
  int first = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  int last = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  if (last <= first) last = first + 1;
  Axis axis;
  axis.log = true;
  axis.min = std::pow(10.0, first);
  axis.max = std::pow(10.0, last);
  const int decades = last - first;
  const int every = decades > 8 ? 2 : 1;
  for (int k = first; k <= last; k += every) {
    axis.ticks.push_back(std::pow(10.0, k));
    if (decades == 1 && k < last) {
      axis.ticks.push_back(2 * std::pow(10.0, k));
      axis.ticks.push_back(5 * std::pow(10.0, k));
    }
  }
  return axis;
}

}  // namespace entrograd::launcher
