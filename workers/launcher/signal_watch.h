// Turns SIGINT, SIGTERM and SIGCHLD into readable events on a signalfd, so
// the launcher's single poll loop sees signals and child exits in order
// with pipe output, without async-signal-safety concerns.
//
// Create it on the main thread before any other thread starts: the signals
// are blocked for the calling thread (threads started later inherit that).
// Children must unblock them before exec (ChildProcess does). The previous
// mask is restored on destruction.
#ifndef ENTROGRAD_WORKERS_LAUNCHER_SIGNAL_WATCH_H_
#define ENTROGRAD_WORKERS_LAUNCHER_SIGNAL_WATCH_H_

#include <signal.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"

namespace entrograd::launcher {

class SignalWatch {
 public:
  // INTERNAL when the mask or the signalfd cannot be set up.
  static absl::StatusOr<std::unique_ptr<SignalWatch>> Create();
  ~SignalWatch();

  SignalWatch(const SignalWatch&) = delete;
  SignalWatch& operator=(const SignalWatch&) = delete;

  // Poll it for POLLIN.
  int fd() const { return fd_; }

  // The signals received since the last call, in order, without blocking.
  std::vector<int> Drain();

 private:
  SignalWatch() = default;
  int fd_ = -1;
  sigset_t previous_mask_;
};

}  // namespace entrograd::launcher

#endif  // ENTROGRAD_WORKERS_LAUNCHER_SIGNAL_WATCH_H_
