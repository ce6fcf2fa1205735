#include "support/captured_process.h"

#include <poll.h>
#include <signal.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace entrograd::testing {

using launcher::ChildProcess;
using Stream = ChildProcess::Stream;

absl::StatusOr<std::unique_ptr<CapturedProcess>> CapturedProcess::Start(
    const std::vector<std::string>& argv) {
  absl::StatusOr<std::unique_ptr<ChildProcess>> process = ChildProcess::Spawn(
      argv.at(0), std::vector<std::string>(argv.begin() + 1, argv.end()));
  if (!process.ok()) return process.status();
  std::unique_ptr<CapturedProcess> captured(new CapturedProcess());
  captured->process_ = std::move(*process);
  return captured;
}

bool CapturedProcess::Pump(absl::Duration wait) {
  pollfd fds[2];
  nfds_t count = 0;
  for (Stream stream : {Stream::kStdout, Stream::kStderr}) {
    const int fd = process_->fd(stream);
    if (fd >= 0) fds[count++] = {fd, POLLIN, 0};
  }
  if (count == 0) return false;
  ::poll(fds, count, static_cast<int>(absl::ToInt64Milliseconds(wait)));
  const bool out_open = process_->ReadAvailable(Stream::kStdout, &out_);
  const bool err_open = process_->ReadAvailable(Stream::kStderr, &err_);
  return out_open || err_open;
}

bool CapturedProcess::WaitForOutput(const std::string& needle,
                                    absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  auto seen = [&] {
    return absl::StrContains(out_, needle) || absl::StrContains(err_, needle);
  };
  while (!seen()) {
    if (absl::Now() >= deadline) return false;
    if (!Pump(absl::Milliseconds(50))) return seen();
  }
  return true;
}

absl::StatusOr<int> CapturedProcess::Wait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (Pump(absl::Milliseconds(50))) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("still running; output:\n", Output()));
    }
  }
  // Its pipes are closed: it is exiting. Poll for the exit, bounded.
  while (!process_->TryReap()) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("did not exit; output:\n", Output()));
    }
    ::poll(nullptr, 0, 10);
  }
  return *process_->wait_status();
}

void CapturedProcess::Signal(int signal) { ::kill(process_->pid(), signal); }

std::string CapturedProcess::Output() const {
  return absl::StrCat("--- stdout ---\n", out_, "--- stderr ---\n", err_);
}

}  // namespace entrograd::testing
