#include "workers/launcher/launcher_test_util.h"

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace entrograd::launcher::testing {

std::string LauncherPath() { return ENTROGRAD_LAUNCH_PATH; }
std::string AggregatorPath() { return ENTROGRAD_AGGREGATOR_PATH; }
std::string WorkerPath() { return ENTROGRAD_WORKER_PATH; }

absl::StatusOr<std::unique_ptr<LauncherProcess>> LauncherProcess::Start(
    const std::vector<std::string>& args) {
  absl::StatusOr<std::unique_ptr<ChildProcess>> process =
      ChildProcess::Spawn(LauncherPath(), args);
  if (!process.ok()) return process.status();
  std::unique_ptr<LauncherProcess> launcher(new LauncherProcess());
  launcher->process_ = std::move(*process);
  return launcher;
}

bool LauncherProcess::Pump(absl::Duration wait) {
  using Stream = ChildProcess::Stream;
  pollfd fds[2];
  int count = 0;
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

bool LauncherProcess::WaitForOutput(const std::string& needle,
                                    absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    if (absl::StrContains(out_, needle) || absl::StrContains(err_, needle)) {
      return true;
    }
    if (absl::Now() >= deadline) return false;
    if (!Pump(absl::Milliseconds(50))) {
      return absl::StrContains(out_, needle) || absl::StrContains(err_, needle);
    }
  }
}

absl::StatusOr<int> LauncherProcess::Wait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (Pump(absl::Milliseconds(50))) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("entrograd-launch still running; output:\n", Output()));
    }
  }
  while (!process_->TryReap()) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("entrograd-launch did not exit; output:\n", Output()));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return *process_->wait_status();
}

void LauncherProcess::Signal(int signal) { ::kill(process_->pid(), signal); }

std::string LauncherProcess::Output() const {
  return absl::StrCat("--- stdout ---\n", out_, "--- stderr ---\n", err_);
}

std::string WriteExecutable(const std::string& dir, const std::string& name,
                            const std::string& contents) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << contents;
  ::chmod(path.c_str(), 0755);
  return path;
}

std::string WriteStandInWorker(const std::string& dir,
                               const std::string& pid_dir, int world_size,
                               const std::string& body) {
  const std::string script = absl::StrCat(
      "#!/bin/sh\n"
      "# Stand-in for entrograd-worker (failure-handling tests only).\n"
      "rank=-1\n"
      "for arg in \"$@\"; do\n"
      "  case \"$arg\" in --rank=*) rank=\"${arg#--rank=}\" ;; esac\n"
      "done\n"
      "echo $$ > '",
      pid_dir,
      "/worker'\"$rank\".pid\n"
      "echo \"{\\\"event\\\":\\\"start\\\",\\\"rank\\\":$rank,"
      "\\\"world_size\\\":",
      world_size, ",\\\"steps_per_epoch\\\":10,\\\"total_steps\\\":10}\"\n",
      body, "\n");
  return WriteExecutable(dir, "stand-in-worker.sh", script);
}

pid_t ReadWorkerPid(const std::string& pid_dir, int rank) {
  std::string text =
      ReadFileOrEmpty(absl::StrCat(pid_dir, "/worker", rank, ".pid"));
  int pid = -1;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &pid)) return -1;
  return pid;
}

bool ProcessAlive(pid_t pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0) return false;
  // A zombie still answers kill(0): look at its state.
  std::string stat = ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/stat"));
  const size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ||
         stat[close + 2] != 'Z';
}

bool WaitUntilGone(pid_t pid, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (ProcessAlive(pid)) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return true;
}

pid_t AggregatorPidFromOutput(const std::string& output) {
  constexpr absl::string_view kMarker = "aggregator (pid ";
  const size_t at = absl::string_view(output).find(kMarker);
  if (at == std::string::npos) return -1;
  const size_t start = at + kMarker.size();
  const size_t end = output.find(')', start);
  int pid = -1;
  if (end == std::string::npos ||
      !absl::SimpleAtoi(output.substr(start, end - start), &pid)) {
    return -1;
  }
  return pid;
}

TempDir::TempDir() {
  std::string pattern = ::testing::TempDir() + "launcher_test_XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << pattern << " failed";
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code error;
  std::filesystem::remove_all(path_, error);
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace entrograd::launcher::testing
