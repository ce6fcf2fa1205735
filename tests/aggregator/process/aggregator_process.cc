#include "aggregator/process/aggregator_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace entrograd::testing {

std::string DescribeWaitStatus(int wait_status) {
  return launcher::DescribeWaitStatus(wait_status);
}

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(
    const std::string& path, const std::vector<std::string>& args) {
  absl::StatusOr<std::unique_ptr<launcher::ChildProcess>> process =
      launcher::ChildProcess::Spawn(path, args);
  if (!process.ok()) return process.status();
  std::unique_ptr<ChildProcess> child(new ChildProcess(std::move(*process)));
  child->reader_ = std::thread([raw = child.get()] { raw->ReadLoop(); });
  return child;
}

ChildProcess::ChildProcess(std::unique_ptr<launcher::ChildProcess> process)
    : process_(std::move(process)) {}

ChildProcess::~ChildProcess() {
  Kill();
  {
    absl::MutexLock lock(&mutex_);
    stop_reader_ = true;
  }
  if (reader_.joinable()) reader_.join();
  // process_ closes the pipes once the reader no longer polls them.
}

void ChildProcess::ReadLoop() {
  using Stream = launcher::ChildProcess::Stream;
  int idle_polls_after_stop = 0;
  while (true) {
    // A stream's fd turns -1 once ReadAvailable saw its end of file.
    pollfd fds[2];
    Stream streams[2];
    int count = 0;
    for (Stream stream : {Stream::kStdout, Stream::kStderr}) {
      if (process_->fd(stream) < 0) continue;
      streams[count] = stream;
      fds[count++] = {process_->fd(stream), POLLIN, 0};
    }
    if (count == 0) break;
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
      std::string chunk;
      const bool open = process_->ReadAvailable(streams[i], &chunk);
      const bool is_out = streams[i] == Stream::kStdout;
      absl::MutexLock lock(&mutex_);
      (is_out ? stdout_ : stderr_).append(chunk);
      if (!open) (is_out ? stdout_closed_ : stderr_closed_) = true;
    }
  }
  absl::MutexLock lock(&mutex_);
  stdout_closed_ = true;
  stderr_closed_ = true;
}

absl::Status ChildProcess::Signal(int signal) {
  if (!process_->running()) {
    return absl::FailedPreconditionError("the child was already reaped");
  }
  // The child alone, as a test means it; SignalGroup would reach the
  // grandchildren too.
  if (::kill(process_->pid(), signal) != 0) {
    return absl::InternalError(absl::StrCat("kill: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> ChildProcess::Wait(absl::Duration timeout) {
  if (!process_->running()) return *process_->wait_status();
  const absl::Time deadline = absl::Now() + timeout;
  while (!process_->TryReap()) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("pid ", process_->pid(), " still running after ",
                       absl::FormatDuration(timeout)));
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  AwaitOutputClosed(absl::Seconds(1));
  return *process_->wait_status();
}

int ChildProcess::Kill() {
  if (process_->running()) {
    process_->SignalGroup(SIGKILL).IgnoreError();
    process_->Reap();
  }
  return *process_->wait_status();
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
