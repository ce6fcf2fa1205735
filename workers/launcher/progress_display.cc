#include "workers/launcher/progress_display.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "workers/launcher/format_units.h"

namespace entrograd::launcher {

namespace {

constexpr int kBarWidth = 24;
// "\r" back to the line start, ESC[K clears to its end.
constexpr absl::string_view kClearLine = "\r\033[K";

std::string Bar(int64_t done, int64_t total) {
  const double fraction =
      total > 0 ? std::clamp(static_cast<double>(done) / total, 0.0, 1.0) : 0;
  const int filled = static_cast<int>(fraction * kBarWidth);
  std::string bar = "[";
  bar.append(filled, '=');
  if (filled < kBarWidth) {
    bar.push_back(done > 0 ? '>' : ' ');
    bar.append(kBarWidth - filled - 1, ' ');
  }
  bar.push_back(']');
  return bar;
}

}  // namespace

ProgressDisplay::ProgressDisplay(std::ostream& out, std::ostream& err,
                                 bool interactive)
    : out_(out), err_(err), interactive_(interactive) {}

std::string ProgressDisplay::StatusLine(const ProgressSnapshot& snapshot,
                                        bool with_bar) {
  std::string line = absl::StrFormat("epoch %d/%d ", snapshot.epoch,
                                     std::max(snapshot.epochs, snapshot.epoch));
  if (with_bar) {
    absl::StrAppend(&line, Bar(snapshot.epoch_steps_done, snapshot.epoch_steps),
                    " ");
  } else {
    line += "step ";
  }
  absl::StrAppendFormat(&line, "%d/%d  loss %s  ratio %s",
                        snapshot.epoch_steps_done, snapshot.epoch_steps,
                        FormatLoss(snapshot.loss), FormatRatio(snapshot.ratio));
  if (snapshot.steps_per_second > 0) {
    absl::StrAppendFormat(&line, "  %.1f step/s", snapshot.steps_per_second);
    if (snapshot.total_steps > snapshot.steps_done) {
      absl::StrAppend(
          &line, "  ETA ",
          FormatSeconds((snapshot.total_steps - snapshot.steps_done) /
                        snapshot.steps_per_second));
    }
  }
  return line;
}

std::string ProgressDisplay::EpochLine(const EpochReport& report) {
  std::string line = absl::StrFormat(
      "epoch %d/%d done: train loss %s", report.epoch,
      std::max(report.epochs, report.epoch), FormatLoss(report.train_loss));
  if (report.test_loss.has_value()) {
    absl::StrAppend(&line, "  test loss ", FormatLoss(*report.test_loss));
  }
  if (report.test_accuracy.has_value()) {
    absl::StrAppend(&line, "  test accuracy ",
                    FormatPercent(*report.test_accuracy));
  }
  absl::StrAppend(&line, "  ratio ", FormatRatio(report.ratio), " (",
                  FormatBytes(report.wire_bytes), " on the wire)");
  return line;
}

void ProgressDisplay::Update(const ProgressSnapshot& snapshot) {
  if (interactive_) {
    const absl::Time now = absl::Now();
    const bool epoch_end = snapshot.epoch_steps_done >= snapshot.epoch_steps;
    if (!epoch_end && now - last_draw_ < absl::Milliseconds(100)) return;
    last_draw_ = now;
    out_ << kClearLine << StatusLine(snapshot, /*with_bar=*/true) << std::flush;
    status_drawn_ = true;
    return;
  }
  const int64_t tenth =
      snapshot.epoch_steps > 0
          ? std::min<int64_t>(
                10, snapshot.epoch_steps_done * 10 / snapshot.epoch_steps)
          : 0;
  if (snapshot.epoch == last_epoch_ && tenth == last_tenth_) return;
  // The first step of an epoch only starts the count; say nothing yet.
  const bool first_of_epoch = snapshot.epoch != last_epoch_;
  last_epoch_ = snapshot.epoch;
  last_tenth_ = tenth;
  if (first_of_epoch && tenth == 0) return;
  out_ << StatusLine(snapshot, /*with_bar=*/false) << "\n" << std::flush;
}

void ProgressDisplay::Epoch(const EpochReport& report) {
  Message(EpochLine(report));
}

void ProgressDisplay::Message(absl::string_view line) {
  ClearStatus();
  out_ << line << "\n" << std::flush;
}

void ProgressDisplay::Error(absl::string_view line) {
  ClearStatus();
  err_ << line << "\n" << std::flush;
}

void ProgressDisplay::Finish() { ClearStatus(); }

void ProgressDisplay::ClearStatus() {
  if (!status_drawn_) return;
  out_ << kClearLine << std::flush;
  status_drawn_ = false;
  // Redraw with the next update, however soon.
  last_draw_ = absl::InfinitePast();
}

}  // namespace entrograd::launcher
