#include "workers/launcher/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

extern char** environ;

namespace entrograd::launcher {

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
  // exec only async-signal-safe calls are made.
  std::vector<std::string> argv_storage;
  argv_storage.push_back(path);
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_storage) argv.push_back(arg.data());
  argv.push_back(nullptr);

  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  // exec_pipe carries errno from a failed exec; a successful exec closes it
  // (O_CLOEXEC), which the parent reads as EOF.
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
    // Child: die with the launcher, even if it is SIGKILLed; and if it died
    // already, before prctl took effect, do not run at all.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);
    ::setpgid(0, 0);
    // The launcher blocks SIGINT/SIGTERM/SIGCHLD (it reads them from a
    // signalfd) and ignores SIGPIPE; both would be inherited through exec.
    sigset_t empty;
    sigemptyset(&empty);
    ::sigprocmask(SIG_SETMASK, &empty, nullptr);
    struct sigaction default_action;
    std::memset(&default_action, 0, sizeof(default_action));
    default_action.sa_handler = SIG_DFL;
    for (int signal : {SIGPIPE, SIGINT, SIGTERM, SIGCHLD}) {
      ::sigaction(signal, &default_action, nullptr);
    }
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

  // Parent. Set the group here too: whichever of the two runs first, the
  // group exists before the parent signals it.
  ::setpgid(pid, pid);
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
    while (::waitpid(pid, &ignored, 0) < 0 && errno == EINTR) {
    }
    CloseFd(out_pipe[0]);
    CloseFd(err_pipe[0]);
    return absl::InternalError(
        absl::StrCat("cannot exec ", path, ": ", std::strerror(exec_errno)));
  }
  for (int fd : {out_pipe[0], err_pipe[0]}) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  child->pid_ = pid;
  child->stdout_fd_ = out_pipe[0];
  child->stderr_fd_ = err_pipe[0];
  return child;
}

ChildProcess::~ChildProcess() {
  if (running()) {
    SignalGroup(SIGKILL).IgnoreError();
    Reap();
  }
  CloseFd(stdout_fd_);
  CloseFd(stderr_fd_);
}

int ChildProcess::fd(Stream stream) const {
  return stream == Stream::kStdout ? stdout_fd_ : stderr_fd_;
}

bool ChildProcess::ReadAvailable(Stream stream, std::string* out) {
  int& fd = stream == Stream::kStdout ? stdout_fd_ : stderr_fd_;
  if (fd < 0) return false;
  char buffer[65536];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      out->append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    CloseFd(fd);  // EOF, or an error no retry fixes
    return false;
  }
}

absl::Status ChildProcess::SignalGroup(int signal) {
  if (!running()) return absl::OkStatus();
  if (::kill(-pid_, signal) == 0) return absl::OkStatus();
  // The group may not exist yet if the child has not run setpgid: signal
  // the child itself.
  if (::kill(pid_, signal) == 0) return absl::OkStatus();
  return ErrnoStatus(absl::StrCat("kill ", pid_));
}

bool ChildProcess::TryReap() {
  if (!running()) return true;
  int status = 0;
  pid_t result;
  do {
    result = ::waitpid(pid_, &status, WNOHANG);
  } while (result < 0 && errno == EINTR);
  if (result == pid_) {
    OnReaped(status);
  } else if (result < 0) {
    OnReaped(0);  // ECHILD: not ours to wait for any more
  }
  return !running();
}

void ChildProcess::Reap() {
  if (!running()) return;
  int status = 0;
  pid_t result;
  do {
    result = ::waitpid(pid_, &status, 0);
  } while (result < 0 && errno == EINTR);
  OnReaped(result == pid_ ? status : 0);
}

void ChildProcess::OnReaped(int status) {
  wait_status_ = status;
  // The group outlives its leader while a grandchild is in it. The id is
  // still reserved by that grandchild, so this reaches no stranger; with the
  // group empty it fails with ESRCH, which is fine.
  ::kill(-pid_, SIGKILL);
}

}  // namespace entrograd::launcher
