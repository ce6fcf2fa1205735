#include "bench/aggregator_load/shard_process.h"

#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "workers/launcher/child_commands.h"

namespace entrograd::bench {

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ShardProcess>> ShardProcess::Start(
    const std::string& binary, const std::vector<std::string>& flags,
    const std::string& log_path, absl::Duration timeout) {
  // sh only redirects, then execs the shard in its place: the pid (whose
  // /proc status is sampled) is the aggregator's own.
  std::vector<std::string> args = {"-c", "log=$0; exec \"$@\" >\"$log\" 2>&1",
                                   log_path, binary,
                                   "--listen=127.0.0.1:0",
                                   "--metrics_listen=127.0.0.1:0"};
  args.insert(args.end(), flags.begin(), flags.end());
  // A log left by an earlier run in the same directory would be read below
  // before sh truncates it, and its port line taken for this shard's.
  std::remove(log_path.c_str());
  absl::StatusOr<std::unique_ptr<launcher::ChildProcess>> child =
      launcher::ChildProcess::Spawn("/bin/sh", args);
  if (!child.ok()) return child.status();
  std::unique_ptr<ShardProcess> shard(
      new ShardProcess(std::move(*child), log_path));
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    std::istringstream log(ReadFile(log_path));
    std::string line;
    launcher::AggregatorPorts ports;
    while (std::getline(log, line)) {
      if (launcher::ParseAggregatorPortLine(line, &ports)) {
        shard->port_ = ports.port;
        shard->metrics_port_ = ports.metrics_port;
        return shard;
      }
    }
    if (!shard->Running()) {
      return absl::InternalError(absl::StrCat(
          binary, " ", launcher::DescribeWaitStatus(
                           *shard->process_->wait_status()),
          " before serving; its log:\n", ReadFile(log_path)));
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat(binary, " printed no port line within ",
                       absl::FormatDuration(timeout), "; its log:\n",
                       ReadFile(log_path)));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

std::string ShardProcess::address() const {
  return absl::StrCat("127.0.0.1:", port_);
}

bool ShardProcess::Running() { return !process_->TryReap(); }

std::string ShardProcess::Stop(absl::Duration timeout) {
  if (Running()) {
    process_->SignalGroup(SIGTERM).IgnoreError();
    const absl::Time deadline = absl::Now() + timeout;
    while (Running() && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    if (Running()) {
      process_->SignalGroup(SIGKILL).IgnoreError();
      process_->Reap();
    }
  }
  return launcher::DescribeWaitStatus(*process_->wait_status());
}

}  // namespace entrograd::bench
