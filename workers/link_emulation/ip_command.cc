#include "workers/link_emulation/ip_command.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "workers/launcher/child_process.h"

namespace entrograd::link_emulation {

namespace {

using launcher::ChildProcess;
using Stream = ChildProcess::Stream;

// Where ip and tc live on Debian and most distributions, for a PATH
// without sbin (ctest under a non-login shell).
constexpr const char* kFallbackDirs[] = {"/usr/sbin", "/sbin", "/usr/bin",
                                         "/bin"};

bool IsExecutableFile(const std::string& path) {
  return ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

absl::StatusOr<std::string> FindSystemTool(absl::string_view name,
                                           absl::string_view package) {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
      dirs.emplace_back(dir);
    }
  }
  for (const char* dir : kFallbackDirs) dirs.emplace_back(dir);
  for (const std::string& dir : dirs) {
    const std::string candidate = absl::StrCat(dir, "/", name);
    if (IsExecutableFile(candidate)) return candidate;
  }
  return absl::NotFoundError(absl::StrCat("`", name,
                                          "` not found in PATH or /usr/sbin, "
                                          "/sbin (install the package ",
                                          package, ")"));
}

std::string FormatCommand(const std::vector<std::string>& argv) {
  return absl::StrJoin(argv, " ");
}

absl::StatusOr<std::string> RunCommand(const std::vector<std::string>& argv,
                                       absl::Duration timeout) {
  if (argv.empty()) return absl::InvalidArgumentError("empty command");
  const std::string command = FormatCommand(argv);
  absl::StatusOr<std::unique_ptr<ChildProcess>> spawned = ChildProcess::Spawn(
      argv[0], std::vector<std::string>(argv.begin() + 1, argv.end()));
  if (!spawned.ok()) {
    return absl::InternalError(
        absl::StrCat("`", command, "`: ", spawned.status().message()));
  }
  ChildProcess& child = **spawned;
  std::string out;
  std::string err;
  const absl::Time deadline = absl::Now() + timeout;
  // Both pipes to end of file: the tool printed everything and is exiting.
  while (child.fd(Stream::kStdout) >= 0 || child.fd(Stream::kStderr) >= 0) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      child.SignalGroup(SIGKILL).IgnoreError();
      child.Reap();
      return absl::DeadlineExceededError(
          absl::StrCat("`", command, "` did not finish within ",
                       absl::FormatDuration(timeout), "; killed it"));
    }
    pollfd fds[2];
    nfds_t count = 0;
    for (Stream stream : {Stream::kStdout, Stream::kStderr}) {
      if (child.fd(stream) >= 0) fds[count++] = {child.fd(stream), POLLIN, 0};
    }
    // Rounded up (a 0 ms poll would spin for the last sub-millisecond) and
    // capped (an infinite timeout does not fit an int).
    const absl::Duration wait = std::min(left, absl::Seconds(1));
    ::poll(fds, count, static_cast<int>(absl::ToInt64Milliseconds(wait)) + 1);
    child.ReadAvailable(Stream::kStdout, &out);
    child.ReadAvailable(Stream::kStderr, &err);
  }
  child.Reap();
  const int status = *child.wait_status();
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return out;
  const absl::string_view message = absl::StripAsciiWhitespace(err);
  return absl::InternalError(
      absl::StrCat("`", command, "` ", launcher::DescribeWaitStatus(status),
                   message.empty() ? "" : ": ", message));
}

}  // namespace entrograd::link_emulation
