// A child process of a test, with its stdout and stderr collected while the
// test waits: for the process tests of the binaries (entrograd-launch,
// entrograd-netns, helpers inside emulated hosts). Killed with its group
// when destroyed (ChildProcess), so a failing test leaves nothing running.
//
// Thread safety: one thread per object.
#ifndef ENTROGRAD_TESTS_SUPPORT_CAPTURED_PROCESS_H_
#define ENTROGRAD_TESTS_SUPPORT_CAPTURED_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "workers/launcher/child_process.h"

namespace entrograd::testing {

class CapturedProcess {
 public:
  // Runs argv[0] (a path) with argv[1..]. INTERNAL when it cannot start.
  static absl::StatusOr<std::unique_ptr<CapturedProcess>> Start(
      const std::vector<std::string>& argv);

  // Collects output until stdout or stderr contains `needle`; false when the
  // process closed both or `timeout` passed first.
  bool WaitForOutput(const std::string& needle, absl::Duration timeout);

  // Collects output until the process exited and its pipes closed; the raw
  // wait status, or DEADLINE_EXCEEDED (the process is left running).
  absl::StatusOr<int> Wait(absl::Duration timeout);

  // To the process only, not its group: as a user's `kill` would.
  void Signal(int signal);
  pid_t pid() const { return process_->pid(); }
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }
  // stdout and stderr, for failure messages.
  std::string Output() const;

 private:
  // Reads what is there (waiting up to `wait` for some); false once both
  // pipes are closed.
  bool Pump(absl::Duration wait);

  std::unique_ptr<launcher::ChildProcess> process_;
  std::string out_;
  std::string err_;
};

}  // namespace entrograd::testing

#endif  // ENTROGRAD_TESTS_SUPPORT_CAPTURED_PROCESS_H_
