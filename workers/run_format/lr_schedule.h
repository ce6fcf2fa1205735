// The learning rate of each step of the training job (--lr_schedule): the
// worker sets it on its optimizer before every step; the launcher checks the
// name before it starts anything and records it in summary.json. A pure function of the
// step, so a run resumed from a checkpoint takes the same rates as one that
// never stopped, and every rank the same rate.
//
// Thread safety: pure functions.
#ifndef ENTROGRAD_WORKERS_RUN_FORMAT_LR_SCHEDULE_H_
#define ENTROGRAD_WORKERS_RUN_FORMAT_LR_SCHEDULE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace entrograd {

enum class LrSchedule {
  kConstant,  // the base rate throughout
  // Cosine annealing (Loshchilov and Hutter's SGDR without restarts): the
  // base rate at step 0, falling as a half cosine towards 0 at total_steps.
  kCosine,
};

// "constant" or "cosine"; INVALID_ARGUMENT naming the choices otherwise.
absl::StatusOr<LrSchedule> ParseLrSchedule(absl::string_view name);
absl::string_view LrScheduleName(LrSchedule schedule);

// The rate of step `step` (0-based, < total_steps, total_steps >= 1) of a run
// of `total_steps` steps at base rate `base`: > 0 whenever base is.
double LearningRateAt(LrSchedule schedule, double base, int64_t step,
                      int64_t total_steps);

}  // namespace entrograd

#endif  // ENTROGRAD_WORKERS_RUN_FORMAT_LR_SCHEDULE_H_
