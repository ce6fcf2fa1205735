#include "workers/link_emulation/netns_test_util.h"

#include <poll.h>
#include <signal.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "workers/link_emulation/ip_command.h"
#include "workers/link_emulation/netns_commands.h"

namespace entrograd::link_emulation::testing {

using launcher::ChildProcess;
using Stream = ChildProcess::Stream;

std::string NetnsPath() { return ENTROGRAD_NETNS_PATH; }
std::string TcpRateHelperPath() { return ENTROGRAD_TCP_RATE_HELPER_PATH; }

absl::StatusOr<std::vector<std::string>> NamespacesNow() {
  absl::StatusOr<std::string> ip = FindSystemTool("ip", "iproute2");
  if (!ip.ok()) return ip.status();
  return ListNetns(*ip);
}

absl::StatusOr<std::vector<std::string>> NamespacesOfPid(pid_t pid) {
  absl::StatusOr<std::vector<std::string>> all = NamespacesNow();
  if (!all.ok()) return all.status();
  const std::string prefix = absl::StrCat("eg", pid, "-");
  std::vector<std::string> matching;
  for (const std::string& name : *all) {
    if (absl::StartsWith(name, prefix)) matching.push_back(name);
  }
  return matching;
}

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

bool CapturedProcess::WaitForStdout(const std::string& needle,
                                    absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!absl::StrContains(out_, needle)) {
    if (absl::Now() >= deadline) return false;
    if (!Pump(absl::Milliseconds(100))) return absl::StrContains(out_, needle);
  }
  return true;
}

absl::StatusOr<int> CapturedProcess::Wait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (Pump(absl::Milliseconds(100))) {
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

}  // namespace entrograd::link_emulation::testing
