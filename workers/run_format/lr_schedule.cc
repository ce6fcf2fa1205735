#include "workers/run_format/lr_schedule.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace entrograd {

absl::StatusOr<LrSchedule> ParseLrSchedule(absl::string_view name) {
  if (name == "constant") return LrSchedule::kConstant;
  if (name == "cosine") return LrSchedule::kCosine;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown learning-rate schedule \"", name, "\"; expected constant or cosine"));
}

absl::string_view LrScheduleName(LrSchedule schedule) {
  switch (schedule) {
    case LrSchedule::kConstant:
      return "constant";
    case LrSchedule::kCosine:
      return "cosine";
  }
  return "unknown";
}

double LearningRateAt(LrSchedule schedule, double base, int64_t step,
                      int64_t total_steps) {
  if (schedule == LrSchedule::kConstant || total_steps <= 0) return base;
  // step < total_steps, so the cosine stays above -1 and the rate above 0.
  const double progress =
      static_cast<double>(step) / static_cast<double>(total_steps);
  return base * 0.5 * (1.0 + std::cos(M_PI * progress));
}

}  // namespace entrograd
