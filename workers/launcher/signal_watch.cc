#include "workers/launcher/signal_watch.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace entrograd::launcher {

absl::StatusOr<std::unique_ptr<SignalWatch>> SignalWatch::Create() {
  std::unique_ptr<SignalWatch> watch(new SignalWatch());
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGCHLD);
  if (int error = pthread_sigmask(SIG_BLOCK, &signals, &watch->previous_mask_);
      error != 0) {
    return absl::InternalError(
        absl::StrCat("pthread_sigmask: ", std::strerror(error)));
  }
  watch->fd_ = ::signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
  if (watch->fd_ < 0) {
    const int error = errno;
    pthread_sigmask(SIG_SETMASK, &watch->previous_mask_, nullptr);
    return absl::InternalError(
        absl::StrCat("signalfd: ", std::strerror(error)));
  }
  return watch;
}

SignalWatch::~SignalWatch() {
  if (fd_ < 0) return;
  ::close(fd_);
  // Signals still pending (a SIGCHLD) would be delivered with their default
  // action once unblocked; SIGCHLD's is to ignore, and a late SIGINT/SIGTERM
  // ending the process is what its sender asked for.
  pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
}

std::vector<int> SignalWatch::Drain() {
  std::vector<int> received;
  signalfd_siginfo info;
  while (true) {
    const ssize_t n = ::read(fd_, &info, sizeof(info));
    if (n == static_cast<ssize_t>(sizeof(info))) {
      received.push_back(static_cast<int>(info.ssi_signo));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return received;
  }
}

}  // namespace entrograd::launcher
