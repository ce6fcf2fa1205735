// Live progress of a run for a person watching: on a terminal one status
// line redrawn in place (a bar for the current epoch, loss, compression
// ratio, speed); otherwise (a pipe, a CI log) plain lines at every tenth of
// an epoch, with no escape codes. Both print a line per finished epoch.
//
// Thread safety: none (the launcher's event loop owns it).
#ifndef ENTROGRAD_WORKERS_LAUNCHER_PROGRESS_DISPLAY_H_
#define ENTROGRAD_WORKERS_LAUNCHER_PROGRESS_DISPLAY_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace entrograd::launcher {

// Where the run is, from rank 0's events.
struct ProgressSnapshot {
  int64_t epoch = 0;   // 1-based ordinal of the current epoch
  int64_t epochs = 0;  // epochs the run will reach
  int64_t epoch_steps_done = 0;
  int64_t epoch_steps = 0;  // steps this epoch will have
  int64_t steps_done = 0;
  int64_t total_steps = 0;
  double loss = 0;              // rank 0's latest
  double ratio = 0;             // dense-equivalent / wire bytes, all ranks
  double steps_per_second = 0;  // 0 while unknown
};

// One finished epoch.
struct EpochReport {
  int64_t epoch = 0;  // 1-based ordinal
  int64_t epochs = 0;
  double train_loss = 0;
  std::optional<double> test_accuracy;  // absent: not evaluated this epoch
  std::optional<double> test_loss;
  double ratio = 0;
  double wire_bytes = 0;
};

class ProgressDisplay {
 public:
  // Progress and messages go to `out`, errors to `err` (both outlive this).
  // `interactive`: `out` is a terminal.
  ProgressDisplay(std::ostream& out, std::ostream& err, bool interactive);

  // Shows `snapshot`: redrawn at most every 100 ms when interactive, else a
  // line when the epoch passes another tenth (and at its last step).
  void Update(const ProgressSnapshot& snapshot);

  void Epoch(const EpochReport& report);

  // A line on `out` / `err`; a status line being drawn is cleared first and
  // comes back with the next Update.
  void Message(absl::string_view line);
  void Error(absl::string_view line);

  // Clears the status line (at the end of the run).
  void Finish();

  // The status line for `snapshot` (what Update draws), for tests.
  static std::string StatusLine(const ProgressSnapshot& snapshot,
                                bool with_bar);
  static std::string EpochLine(const EpochReport& report);

 private:
  void ClearStatus();

  std::ostream& out_;
  std::ostream& err_;
  const bool interactive_;
  bool status_drawn_ = false;
  absl::Time last_draw_ = absl::InfinitePast();
  int64_t last_epoch_ = -1;
  int64_t last_tenth_ = -1;
};

}  // namespace entrograd::launcher

#endif  // ENTROGRAD_WORKERS_LAUNCHER_PROGRESS_DISPLAY_H_
