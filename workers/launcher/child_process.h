// One child process of the launcher: started with fork/exec, stdin from
// /dev/null, stdout and stderr on non-blocking pipes the caller polls.
//
// No orphans: each child leads its own process group (so a terminal's
// Ctrl-C reaches only the launcher, which then stops the children in order)
// and signals go to the whole group, grandchildren included. Every child
// gets PR_SET_PDEATHSIG=SIGKILL, so even a launcher killed hard takes its
// children with it. The destructor SIGKILLs and reaps a child still running.
//
// Also the low-level layer of the process tests' ChildProcess
// (tests/aggregator/process), which adds a reader thread and timeouts.
//
// Thread safety: none; use from the thread that spawned it
// (PR_SET_PDEATHSIG follows the spawning thread). The one exception: the
// pipes (fd, ReadAvailable) share no state with the signal and reap side, so
// one other thread may own them, provided it is done before destruction.
#ifndef ENTROGRAD_WORKERS_LAUNCHER_CHILD_PROCESS_H_
#define ENTROGRAD_WORKERS_LAUNCHER_CHILD_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace entrograd::launcher {

// "exited with status 3", "killed by signal 9 (Killed)".
std::string DescribeWaitStatus(int wait_status);

class ChildProcess {
 public:
  enum class Stream { kStdout, kStderr };

  // Starts `path` with argv[1..] = `args` and the launcher's environment.
  // INTERNAL when a pipe or fork fails or when exec fails (the child's exec
  // error is reported, e.g. "cannot exec /x: No such file or directory").
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Spawn(
      const std::string& path, const std::vector<std::string>& args);

  // SIGKILLs the group if the child still runs, and reaps it.
  ~ChildProcess();

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }

  // The read end of `stream`; -1 once it reached end of file.
  int fd(Stream stream) const;

  // Appends what `stream` has now, without blocking, to *out. Returns false
  // once the stream reached end of file (its fd is closed then).
  bool ReadAvailable(Stream stream, std::string* out);

  // Sends `signal` to the child's process group. No-op (OK) once reaped.
  absl::Status SignalGroup(int signal);

  // Reaps the child if it exited, without blocking. On the exit, SIGKILLs
  // what is left of its group (a grandchild it left behind). Returns whether
  // the child is reaped.
  bool TryReap();

  // Blocks until the child exits (use after SIGKILL), then as TryReap.
  void Reap();

  bool running() const { return !wait_status_.has_value(); }
  // The raw wait status once reaped.
  std::optional<int> wait_status() const { return wait_status_; }

 private:
  ChildProcess() = default;
  void OnReaped(int status);

  pid_t pid_ = -1;
  std::optional<int> wait_status_;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
};

}  // namespace entrograd::launcher

#endif  // ENTROGRAD_WORKERS_LAUNCHER_CHILD_PROCESS_H_
