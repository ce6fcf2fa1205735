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

absl::StatusOr<std::unique_ptr<LauncherProcess>> StartLauncher(
    const std::vector<std::string>& args) {
  std::vector<std::string> argv = {LauncherPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  return LauncherProcess::Start(argv);
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
