// Runs real processes from tests: a generic child (fork/exec with its stdout
// and stderr captured through pipes) and, on top of it, the
// entrograd-aggregator binary, whose "serving on port P, metrics on port M"
// line is read with a timeout.
//
// The fork/exec, pipes and reaping are the launcher's
// (workers/launcher/child_process.h); this adds a reader thread that
// captures the output, and waits with timeouts.
//
// No leaked processes: the destructor SIGKILLs and reaps a child still
// running, and every child gets PR_SET_PDEATHSIG=SIGKILL, so even a test
// binary killed hard (ctest timeout) takes its children with it.
//
// Thread safety: create, signal, wait and destroy a process on one thread
// (the one that spawned it: PR_SET_PDEATHSIG follows the spawning thread).
// The captured output may be read from any thread.
#ifndef ENTROGRAD_TESTS_AGGREGATOR_PROCESS_AGGREGATOR_PROCESS_H_
#define ENTROGRAD_TESTS_AGGREGATOR_PROCESS_AGGREGATOR_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "workers/launcher/child_process.h"

namespace entrograd::testing {

// "exited with status 0", "killed by signal 9 (Killed)", ...
std::string DescribeWaitStatus(int wait_status);

class ChildProcess {
 public:
  // Starts `path` with argv[1..] = `args`, stdin from /dev/null, stdout and
  // stderr captured. Fails when the pipes or fork fail, or when exec fails
  // (the child's exec error is reported, not a silent exit 127).
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Spawn(
      const std::string& path, const std::vector<std::string>& args);

  // SIGKILLs the child if it still runs, reaps it, stops the reader.
  ~ChildProcess();

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return process_->pid(); }

  // Sends `signal` to the child only (not its process group);
  // FAILED_PRECONDITION once the child was reaped.
  absl::Status Signal(int signal);

  // Waits up to `timeout` for the child to exit and returns its raw wait
  // status (use WIFEXITED etc. or DescribeWaitStatus). DEADLINE_EXCEEDED
  // when it is still running then. After a successful wait, the pipes are
  // drained (up to a second) so Stdout()/Stderr() are complete.
  absl::StatusOr<int> Wait(absl::Duration timeout);

  // SIGKILL and reap (no-op once reaped). Returns the wait status.
  int Kill();

  // Waits up to `timeout` for a complete stdout line containing `needle`
  // and returns it. NOT_FOUND when stdout closed (the child exited) without
  // one, DEADLINE_EXCEEDED on timeout; both messages carry the output.
  absl::StatusOr<std::string> WaitForStdoutLine(const std::string& needle,
                                                absl::Duration timeout);

  // Everything captured so far.
  std::string Stdout() const;
  std::string Stderr() const;

  // The exit status once reaped.
  std::optional<int> wait_status() const { return process_->wait_status(); }

 private:
  explicit ChildProcess(std::unique_ptr<launcher::ChildProcess> process);
  void ReadLoop();
  // Waits for the reader to see EOF on both pipes, up to `timeout`.
  void AwaitOutputClosed(absl::Duration timeout);

  // Signalled and reaped on the owning thread; its pipes are read only by
  // reader_, which is joined before process_ closes them.
  std::unique_ptr<launcher::ChildProcess> process_;
  std::thread reader_;

  mutable absl::Mutex mutex_;
  std::string stdout_ ABSL_GUARDED_BY(mutex_);
  std::string stderr_ ABSL_GUARDED_BY(mutex_);
  bool stdout_closed_ ABSL_GUARDED_BY(mutex_) = false;
  bool stderr_closed_ ABSL_GUARDED_BY(mutex_) = false;
  bool stop_reader_ ABSL_GUARDED_BY(mutex_) = false;
};

// The result of a command run to completion.
struct CommandResult {
  int wait_status = 0;
  std::string out;  // stdout
  std::string err;  // stderr
  bool Succeeded() const;
};

// Runs `path args...` to completion, killing it after `timeout`
// (DEADLINE_EXCEEDED then).
absl::StatusOr<CommandResult> RunCommand(const std::string& path,
                                         const std::vector<std::string>& args,
                                         absl::Duration timeout = absl::Seconds(30));

// The path of the entrograd-aggregator binary under test (from the build).
std::string AggregatorBinaryPath();

// One entrograd-aggregator process serving on the loopback.
class AggregatorProcess {
 public:
  // Starts the binary with `flags` (each "--name=value"). --listen and
  // --metrics_listen default to 127.0.0.1:0 unless given. Waits up to
  // `timeout` for the port line; the process is killed if it does not come.
  static absl::StatusOr<std::unique_ptr<AggregatorProcess>> Start(
      std::vector<std::string> flags,
      absl::Duration timeout = absl::Seconds(15));

  int port() const { return port_; }
  int metrics_port() const { return metrics_port_; }
  // "127.0.0.1:<port>".
  std::string address() const;
  ChildProcess& process() { return *process_; }

  absl::Status Signal(int signal) { return process_->Signal(signal); }
  absl::StatusOr<int> Wait(absl::Duration timeout) {
    return process_->Wait(timeout);
  }

 private:
  std::unique_ptr<ChildProcess> process_;
  int port_ = 0;
  int metrics_port_ = 0;
};

// A fresh directory under the test temp dir, removed with its contents when
// destroyed.
class ScopedTempDir {
 public:
  ScopedTempDir();
  ~ScopedTempDir();
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;

  const std::string& path() const { return path_; }
  // path()/name.
  std::string File(const std::string& name) const;
  // Writes `contents` to path()/name and returns that path.
  std::string WriteFile(const std::string& name, const std::string& contents) const;

 private:
  std::string path_;
};

}  // namespace entrograd::testing

#endif  // ENTROGRAD_TESTS_AGGREGATOR_PROCESS_AGGREGATOR_PROCESS_H_
