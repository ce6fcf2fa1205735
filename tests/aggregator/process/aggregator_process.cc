#include "aggregator/process/aggregator_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

extern char** environ;

namespace entrograd::testing {

namespace {

absl::Status ErrnoStatus(absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

std::string DescribeWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) {
    return absl::StrCat("exited with status ", WEXITSTATUS(wait_status));
  }
  if (WIFSIGNALED(wait_status)) {
    return absl::StrCat("killed by signal ", WTERMSIG(wait_status), " (",
                        ::strsignal(WTERMSIG(wait_status)), ")");
  }
  return absl::StrCat("wait status ", wait_status);
}

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(
    const std::string& path, const std::vector<std::string>& args) {
  // Everything the child needs is prepared before fork: between fork and
  // exec only async-signal-safe calls are made (the parent has threads).
  std::vector<std::string> argv_storage;
  argv_storage.push_back(path);
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_storage) argv.push_back(arg.data());
  argv.push_back(nullptr);

  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  // exec_pipe carries errno from a failed exec; it closes on a successful
  // exec (O_CLOEXEC), which the parent sees as EOF.
  int exec_pipe[2] = {-1, -1};
  int dev_null = -1;
  auto close_all = [&] {
    for (int* fd : {&out_pipe[0], &out_pipe[1], &err_pipe[0], &err_pipe[1],
                    &exec_pipe[0], &exec_pipe[1], &dev_null}) {
      CloseFd(*fd);
    }
  };
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    absl::Status status = ErrnoStatus("pipe2");
    close_all();
    return status;
  }
  dev_null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (dev_null < 0) {
    absl::Status status = ErrnoStatus("open /dev/null");
    close_all();
    return status;
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    absl::Status status = ErrnoStatus("fork");
    close_all();
    return status;
  }
  if (pid == 0) {
    // Child. Die with the parent, even if the test binary is SIGKILLed.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);
    // Default signal mask and dispositions (the parent may ignore SIGPIPE).
    sigset_t empty;
    sigemptyset(&empty);
    ::sigprocmask(SIG_SETMASK, &empty, nullptr);
    struct sigaction default_action;
    std::memset(&default_action, 0, sizeof(default_action));
    default_action.sa_handler = SIG_DFL;
    ::sigaction(SIGPIPE, &default_action, nullptr);
    // dup2 clears O_CLOEXEC on the targets.
    if (::dup2(dev_null, 0) < 0 || ::dup2(out_pipe[1], 1) < 0 ||
        ::dup2(err_pipe[1], 2) < 0) {
      const int error = errno;
      (void)!::write(exec_pipe[1], &error, sizeof(error));
      ::_exit(127);
    }
    ::execve(argv[0], argv.data(), environ);
    const int error = errno;
    (void)!::write(exec_pipe[1], &error, sizeof(error));
    ::_exit(127);
  }

  // Parent.
  CloseFd(out_pipe[1]);
  CloseFd(err_pipe[1]);
  CloseFd(exec_pipe[1]);
  CloseFd(dev_null);
  int exec_errno = 0;
  ssize_t n;
  do {
    n = ::read(exec_pipe[0], &exec_errno, sizeof(exec_errno));
  } while (n < 0 && errno == EINTR);
  CloseFd(exec_pipe[0]);
  if (n > 0) {
    int ignored;
    ::waitpid(pid, &ignored, 0);
    CloseFd(out_pipe[0]);
    CloseFd(err_pipe[0]);
    return absl::InternalError(absl::StrCat("cannot exec ", path, ": ",
                                            std::strerror(exec_errno)));
  }

  std::unique_ptr<ChildProcess> child(new ChildProcess());
  child->pid_ = pid;
  child->stdout_fd_ = out_pipe[0];
  child->stderr_fd_ = err_pipe[0];
  child->reader_ = std::thread([raw = child.get()] { raw->ReadLoop(); });
  return child;
}

ChildProcess::~ChildProcess() {
  Kill();
  {
    absl::MutexLock lock(&mutex_);
    stop_reader_ = true;
  }
  if (reader_.joinable()) reader_.join();
  CloseFd(stdout_fd_);
  CloseFd(stderr_fd_);
}

void ChildProcess::ReadLoop() {
  bool out_open = true;
  bool err_open = true;
  int idle_polls_after_stop = 0;
  while (out_open || err_open) {
    pollfd fds[2];
    int count = 0;
    if (out_open) fds[count++] = {stdout_fd_, POLLIN, 0};
    if (err_open) fds[count++] = {stderr_fd_, POLLIN, 0};
    const int ready = ::poll(fds, count, 50);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) {
      absl::MutexLock lock(&mutex_);
      // Stopped and quiet: a grandchild might hold the pipe open forever.
      if (stop_reader_ && ++idle_polls_after_stop >= 4) break;
      continue;
    }
    for (int i = 0; i < count; ++i) {
      if (fds[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      const bool is_out = fds[i].fd == stdout_fd_;
      absl::MutexLock lock(&mutex_);
      if (n <= 0) {
        (is_out ? out_open : err_open) = false;
        (is_out ? stdout_closed_ : stderr_closed_) = true;
      } else {
        (is_out ? stdout_ : stderr_).append(buffer, static_cast<size_t>(n));
      }
    }
  }
  absl::MutexLock lock(&mutex_);
  stdout_closed_ = true;
  stderr_closed_ = true;
}

absl::Status ChildProcess::Signal(int signal) {
  if (wait_status_.has_value()) {
    return absl::FailedPreconditionError("the child was already reaped");
  }
  if (::kill(pid_, signal) != 0) return ErrnoStatus("kill");
  return absl::OkStatus();
}

absl::StatusOr<int> ChildProcess::Wait(absl::Duration timeout) {
  if (wait_status_.has_value()) return *wait_status_;
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int status = 0;
    const pid_t got = ::waitpid(pid_, &status, WNOHANG);
    if (got == pid_) {
      wait_status_ = status;
      AwaitOutputClosed(absl::Seconds(1));
      return status;
    }
    if (got < 0 && errno != EINTR) return ErrnoStatus("waitpid");
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "pid ", pid_, " still running after ", absl::FormatDuration(timeout)));
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
}

int ChildProcess::Kill() {
  if (wait_status_.has_value()) return *wait_status_;
  ::kill(pid_, SIGKILL);
  int status = 0;
  pid_t got;
  do {
    got = ::waitpid(pid_, &status, 0);
  } while (got < 0 && errno == EINTR);
  wait_status_ = status;
  return status;
}

void ChildProcess::AwaitOutputClosed(absl::Duration timeout) {
  absl::MutexLock lock(&mutex_);
  auto closed = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return stdout_closed_ && stderr_closed_;
  };
  mutex_.AwaitWithTimeout(absl::Condition(&closed), timeout);
}

absl::StatusOr<std::string> ChildProcess::WaitForStdoutLine(
    const std::string& needle, absl::Duration timeout) {
  absl::MutexLock lock(&mutex_);
  auto find_line = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_)
      -> std::optional<std::string> {
    for (absl::string_view line : absl::StrSplit(stdout_, '\n')) {
      // Only complete lines: the last piece has no newline yet.
      if (line.data() + line.size() == stdout_.data() + stdout_.size()) break;
      if (absl::StrContains(line, needle)) return std::string(line);
    }
    return std::nullopt;
  };
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return stdout_closed_ || find_line().has_value();
  };
  mutex_.AwaitWithTimeout(absl::Condition(&done), timeout);
  if (std::optional<std::string> line = find_line()) return *line;
  const std::string output =
      absl::StrCat("\n--- stdout ---\n", stdout_, "\n--- stderr ---\n", stderr_);
  if (stdout_closed_) {
    return absl::NotFoundError(absl::StrCat(
        "stdout closed without a line containing \"", needle, "\"", output));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("no line containing \"", needle, "\" within ",
                   absl::FormatDuration(timeout), output));
}

std::string ChildProcess::Stdout() const {
  absl::MutexLock lock(&mutex_);
  return stdout_;
}

std::string ChildProcess::Stderr() const {
  absl::MutexLock lock(&mutex_);
  return stderr_;
}

bool CommandResult::Succeeded() const {
  return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
}

absl::StatusOr<CommandResult> RunCommand(const std::string& path,
                                         const std::vector<std::string>& args,
                                         absl::Duration timeout) {
  absl::StatusOr<std::unique_ptr<ChildProcess>> child =
      ChildProcess::Spawn(path, args);
  if (!child.ok()) return child.status();
  absl::StatusOr<int> status = (*child)->Wait(timeout);
  if (!status.ok()) {
    (*child)->Kill();
    return absl::DeadlineExceededError(
        absl::StrCat(path, " did not finish: ", status.status().message(),
                     "\n", (*child)->Stderr()));
  }
  return CommandResult{*status, (*child)->Stdout(), (*child)->Stderr()};
}

std::string AggregatorBinaryPath() { return ENTROGRAD_AGGREGATOR_PATH; }

absl::StatusOr<std::unique_ptr<AggregatorProcess>> AggregatorProcess::Start(
    std::vector<std::string> flags, absl::Duration timeout) {
  auto has_flag = [&flags](absl::string_view name) {
    for (const std::string& flag : flags) {
      if (absl::StartsWith(flag, absl::StrCat("--", name, "="))) return true;
    }
    return false;
  };
  // Loopback and a free port only: never the defaults (0.0.0.0:50051/9464).
  if (!has_flag("listen")) flags.push_back("--listen=127.0.0.1:0");
  if (!has_flag("metrics_listen")) flags.push_back("--metrics_listen=127.0.0.1:0");

  absl::StatusOr<std::unique_ptr<ChildProcess>> child =
      ChildProcess::Spawn(AggregatorBinaryPath(), flags);
  if (!child.ok()) return child.status();
  std::unique_ptr<AggregatorProcess> aggregator(new AggregatorProcess());
  aggregator->process_ = std::move(*child);

  absl::StatusOr<std::string> line =
      aggregator->process_->WaitForStdoutLine("serving on port", timeout);
  if (!line.ok()) return line.status();  // the destructor kills the child
  int port = 0;
  int metrics_port = 0;
  if (std::sscanf(line->c_str(),
                  "entrograd-aggregator: serving on port %d, metrics on port %d",
                  &port, &metrics_port) != 2 ||
      port <= 0 || metrics_port < 0) {
    return absl::InternalError(
        absl::StrCat("unexpected port line: \"", *line, "\""));
  }
  aggregator->port_ = port;
  aggregator->metrics_port_ = metrics_port;
  return aggregator;
}

std::string AggregatorProcess::address() const {
  return absl::StrCat("127.0.0.1:", port_);
}

ScopedTempDir::ScopedTempDir() {
  std::string pattern = ::testing::TempDir() + "entrograd_process_XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp(" << pattern << "): " << std::strerror(errno);
  }
  path_ = pattern;
}

ScopedTempDir::~ScopedTempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string ScopedTempDir::File(const std::string& name) const {
  return absl::StrCat(path_, "/", name);
}

std::string ScopedTempDir::WriteFile(const std::string& name,
                                     const std::string& contents) const {
  const std::string path = File(name);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << contents;
  if (!file) ADD_FAILURE() << "cannot write " << path;
  return path;
}

}  // namespace entrograd::testing
