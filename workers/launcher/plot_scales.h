// Axis scales for svg_plot: "nice" linear ticks (1, 2, 5 x 10^k) and
// decade ticks on a log scale, with the mapping from data to pixels.
#ifndef ENTROGRAD_WORKERS_LAUNCHER_PLOT_SCALES_H_
#define ENTROGRAD_WORKERS_LAUNCHER_PLOT_SCALES_H_

#include <vector>

namespace entrograd::launcher {

struct Axis {
  double min = 0;  // the axis ends (data values; > 0 when log)
  double max = 1;
  bool log = false;
  std::vector<double> ticks;  // within [min, max], ascending

  // Where `value` lands between `pixel_at_min` and `pixel_at_max` (either
  // may be the larger: SVG's y grows downwards). Values outside the axis
  // map outside the range; non-positive values on a log axis map to min.
  double ToPixel(double value, double pixel_at_min, double pixel_at_max) const;
};

// An axis covering [lo, hi], widened to multiples of a 1/2/5 x 10^k step
// giving about `target_ticks` ticks. lo == hi (or non-finite) is widened to
// a unit range around it. With `integer_step` the step is at least 1
// (step counts).
Axis LinearAxis(double lo, double hi, int target_ticks = 5,
                bool integer_step = false);

// A log10 axis covering [lo, hi] (both > 0; anything else is clamped),
// widened to whole decades, with a tick per decade (every other decade
// beyond 8, and 2 and 5 within the decade when it spans only one).
Axis LogAxis(double lo, double hi);

}  // namespace entrograd::launcher

#endif  // ENTROGRAD_WORKERS_LAUNCHER_PLOT_SCALES_H_
