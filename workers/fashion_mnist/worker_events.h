// The worker's progress as JSON lines on stdout, one flat object per line,
// for entrograd-launch (and for people reading a log). Events: start, step,
// epoch, done, error; see the launcher's worker_events.h for the contract.
//
// Thread safety: not thread-safe; the training loop writes from one thread.
#ifndef ENTROGRAD_WORKERS_FASHION_MNIST_WORKER_EVENTS_H_
#define ENTROGRAD_WORKERS_FASHION_MNIST_WORKER_EVENTS_H_

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace entrograd::workers {

// Builds one event line: {"event": name, key: value, ...}.
class EventLine {
 public:
  explicit EventLine(absl::string_view event);
  EventLine& Add(absl::string_view key, double value);
  EventLine& Add(absl::string_view key, int64_t value);
  EventLine& Add(absl::string_view key, absl::string_view value);
  // Writes the line to `out` and flushes (the launcher reads it live).
  void Emit(std::FILE* out = stdout) const;
  std::string ToString() const;

 private:
  std::string text_;
};

}  // namespace entrograd::workers

#endif  // ENTROGRAD_WORKERS_FASHION_MNIST_WORKER_EVENTS_H_
