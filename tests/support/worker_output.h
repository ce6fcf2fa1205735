// The events in an entrograd-worker's captured stdout, read with the same
// definition the worker writes them with (workers/run_format/worker_event.h),
// so a test never depends on how a line happens to be spelled. Lines that
// are no event (log lines, a line cut short by a kill) are skipped.
// Link entrograd_run_format to use it.
#ifndef ENTROGRAD_TESTS_SUPPORT_WORKER_OUTPUT_H_
#define ENTROGRAD_TESTS_SUPPORT_WORKER_OUTPUT_H_

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "workers/run_format/worker_event.h"

namespace entrograd::testing {

// Every event of type `Event` (run_format::StepEvent, ...) in `output`, in
// order.
template <typename Event>
std::vector<Event> WorkerEventsOf(absl::string_view output) {
  std::vector<Event> events;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    absl::StatusOr<run_format::WorkerEvent> event =
        run_format::ParseWorkerEvent(line);
    if (!event.ok()) continue;
    if (const auto* typed = std::get_if<Event>(&*event)) {
      events.push_back(*typed);
    }
  }
  return events;
}

// The first "done" event in `output`; nullopt when the worker did not
// finish.
inline std::optional<run_format::DoneEvent> DoneEventOf(
    absl::string_view output) {
  std::vector<run_format::DoneEvent> done =
      WorkerEventsOf<run_format::DoneEvent>(output);
  if (done.empty()) return std::nullopt;
  return done.front();
}

// The final parameter hash the worker reported; "" when it did not finish.
inline std::string DoneHashOf(absl::string_view output) {
  std::optional<run_format::DoneEvent> done = DoneEventOf(output);
  return done.has_value() ? done->params_hash : "";
}

}  // namespace entrograd::testing

#endif  // ENTROGRAD_TESTS_SUPPORT_WORKER_OUTPUT_H_
