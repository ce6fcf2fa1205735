// Helpers for the tests that build real topologies: run a binary with its
// output captured, list the namespaces that exist.
#ifndef ENTROGRAD_TESTS_WORKERS_LINK_EMULATION_NETNS_TEST_UTIL_H_
#define ENTROGRAD_TESTS_WORKERS_LINK_EMULATION_NETNS_TEST_UTIL_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "workers/launcher/child_process.h"

namespace entrograd::link_emulation::testing {

// The binaries under test, from the build.
std::string NetnsPath();
std::string TcpRateHelperPath();

// The network namespaces `ip netns list` shows now.
absl::StatusOr<std::vector<std::string>> NamespacesNow();

// Those of them that process `pid` named ("eg<pid>-..."), e.g. the
// leftovers of an entrograd-netns run.
absl::StatusOr<std::vector<std::string>> NamespacesOfPid(pid_t pid);

// A child of the test with its output collected as the test waits. Killed
// (with its group) when destroyed.
class CapturedProcess {
 public:
  // Runs argv[0] (an absolute path) with argv[1..].
  static absl::StatusOr<std::unique_ptr<CapturedProcess>> Start(
      const std::vector<std::string>& argv);

  // Collects output until stdout contains `needle`; false when the process
  // closed its stdout or `timeout` passed first.
  bool WaitForStdout(const std::string& needle, absl::Duration timeout);

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

}  // namespace entrograd::link_emulation::testing

#endif  // ENTROGRAD_TESTS_WORKERS_LINK_EMULATION_NETNS_TEST_UTIL_H_
