// Helpers for the process tests of entrograd-launch: run the binary with
// its output captured, write stand-in worker scripts, check that processes
// are gone.
#ifndef ENTROGRAD_TESTS_WORKERS_LAUNCHER_LAUNCHER_TEST_UTIL_H_
#define ENTROGRAD_TESTS_WORKERS_LAUNCHER_LAUNCHER_TEST_UTIL_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "support/captured_process.h"
#include "workers/launcher/child_process.h"

namespace entrograd::launcher::testing {

// The binaries under test, from the build.
std::string LauncherPath();
std::string AggregatorPath();
std::string WorkerPath();

// entrograd-launch running as a child of the test (its own children die
// with it: PR_SET_PDEATHSIG), started with `args`.
using LauncherProcess = ::entrograd::testing::CapturedProcess;
absl::StatusOr<std::unique_ptr<LauncherProcess>> StartLauncher(
    const std::vector<std::string>& args);

// Writes an executable file `name` into `dir` and returns its path.
std::string WriteExecutable(const std::string& dir, const std::string& name,
                            const std::string& contents);

// A stand-in for entrograd-worker, used only to drive the launcher's
// failure handling: a POSIX shell script that finds its --rank, writes its
// pid to <pid_dir>/worker<rank>.pid, prints a start event for a world of
// `world_size`, and then runs `body` (shell; $rank is set).
std::string WriteStandInWorker(const std::string& dir,
                               const std::string& pid_dir, int world_size,
                               const std::string& body);

// The pid in <pid_dir>/worker<rank>.pid; -1 when missing.
pid_t ReadWorkerPid(const std::string& pid_dir, int rank);

// Whether `pid` names a live process (a zombie counts as gone).
bool ProcessAlive(pid_t pid);

// Waits up to `timeout` for `pid` to be gone.
bool WaitUntilGone(pid_t pid, absl::Duration timeout);

// The aggregator's pid from the launcher's "aggregator (pid N)" line; -1.
pid_t AggregatorPidFromOutput(const std::string& output);

// A fresh directory under the test temp dir, removed when destroyed.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The whole file; empty when it cannot be read.
std::string ReadFileOrEmpty(const std::string& path);

}  // namespace entrograd::launcher::testing

#endif  // ENTROGRAD_TESTS_WORKERS_LAUNCHER_LAUNCHER_TEST_UTIL_H_
