#include "workers/link_emulation/netns_run.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "workers/launcher/child_process.h"
#include "workers/launcher/line_buffer.h"
#include "workers/launcher/signal_watch.h"
#include "workers/link_emulation/host_placeholders.h"
#include "workers/link_emulation/link_emulation_check.h"
#include "workers/link_emulation/link_topology.h"
#include "workers/link_emulation/traffic_json.h"

namespace entrograd::link_emulation {

namespace {

using launcher::ChildProcess;
using launcher::DescribeWaitStatus;
using launcher::LineBuffer;
using launcher::SignalWatch;
using Stream = ChildProcess::Stream;

constexpr absl::string_view kPrefix = "entrograd-netns: ";

void Message(absl::string_view text) {
  std::cerr << kPrefix << text << std::endl;
}

const char* SignalName(int signal) {
  return signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "signal";
}

// One host's copy of the command.
struct Host {
  explicit Host(int index) : index(index) {}

  const int index;
  std::unique_ptr<ChildProcess> process;
  LineBuffer stdout_lines;
  LineBuffer stderr_lines;
};

class NetnsRun {
 public:
  explicit NetnsRun(const NetnsOptions& options) : options_(options) {}

  int Run();

 private:
  // The topology exists from here on; returns the exit status once the
  // hosts are gone, before the topology is removed.
  int RunHosts();
  absl::Status StartHosts();

  // One poll round: output, signals, exits, deadlines.
  void Poll();
  void ReadOutput(Host& host, Stream stream);
  void FlushRest(Host& host);
  void ReapExited();
  void HandleExit(Host& host);
  void HandleSignals();

  // Records the exit status (the first one wins) and stops the hosts.
  void Finish(int exit_code);
  void Stop();
  void KillAll();

  bool AnyRunning() const;
  std::string Describe(const Host& host) const;
  void WriteTraffic(const std::vector<LinkTopology::Counters>& before);

  const NetnsOptions& options_;
  std::unique_ptr<SignalWatch> signals_;
  std::unique_ptr<LinkTopology> topology_;
  std::vector<std::unique_ptr<Host>> hosts_;
  std::optional<int> exit_code_;
  bool stopping_ = false;
  bool killed_ = false;
  absl::Time deadline_ = absl::InfiniteFuture();
  absl::Time kill_deadline_ = absl::InfiniteFuture();
};

int NetnsRun::Run() {
  // Before anything is created: a SIGTERM from here on is read, not fatal,
  // so the topology is always removed.
  absl::StatusOr<std::unique_ptr<SignalWatch>> signals = SignalWatch::Create();
  if (!signals.ok()) {
    Message(signals.status().message());
    return kExitFailure;
  }
  signals_ = std::move(*signals);
  if (absl::Status status = CheckLinkEmulationAvailable(); !status.ok()) {
    Message(status.message());
    return kExitUnavailable;
  }
  absl::StatusOr<std::unique_ptr<LinkTopology>> topology =
      LinkTopology::Create(options_.hosts, options_.link);
  if (!topology.ok()) {
    Message(absl::StrCat("cannot build the emulated network: ",
                         topology.status().message()));
    return kExitFailure;
  }
  topology_ = std::move(*topology);
  int exit_code = RunHosts();
  if (absl::Status status = topology_->Remove(); !status.ok()) {
    Message(status.message());
    if (exit_code == kExitSuccess) exit_code = kExitFailure;
  }
  return exit_code;
}

int NetnsRun::RunHosts() {
  // A signal that came while the network was built stops the run here.
  HandleSignals();
  if (exit_code_.has_value()) return *exit_code_;
  Message(absl::StrCat(options_.hosts, options_.hosts == 1 ? " host" : " hosts",
                       " (", topology_->address(0), "..",
                       topology_->address(options_.hosts - 1), "), links ",
                       options_.link.text, ", namespaces ",
                       topology_->namespace_name(0), ".."));
  std::optional<std::vector<LinkTopology::Counters>> before;
  if (!options_.counters_out.empty()) {
    absl::StatusOr<std::vector<LinkTopology::Counters>> counters =
        topology_->ReadCounters();
    if (!counters.ok()) {
      Message(counters.status().message());
      return kExitFailure;
    }
    before = std::move(*counters);
  }
  deadline_ = absl::Now() + options_.timeout;
  if (absl::Status status = StartHosts(); !status.ok()) {
    Message(absl::StrCat("cannot start the command: ", status.message()));
    Finish(kExitFailure);
  }
  while (AnyRunning()) Poll();
  // What is still buffered (a grandchild's last words) goes out too.
  for (const std::unique_ptr<Host>& host : hosts_) FlushRest(*host);
  if (before.has_value()) WriteTraffic(*before);
  return exit_code_.value_or(kExitSuccess);
}

absl::Status NetnsRun::StartHosts() {
  for (int index = 0; index < options_.hosts; ++index) {
    HostPlaceholders values;
    values.host = index;
    values.hosts = options_.hosts;
    values.addr = topology_->address(index);
    values.addr0 = topology_->address(0);
    const std::vector<std::string> argv = topology_->CommandInHost(
        index, ExpandHostPlaceholders(options_.command, values));
    absl::StatusOr<std::unique_ptr<ChildProcess>> process = ChildProcess::Spawn(
        argv[0], std::vector<std::string>(argv.begin() + 1, argv.end()));
    if (!process.ok()) return process.status();
    auto host = std::make_unique<Host>(index);
    host->process = std::move(*process);
    hosts_.push_back(std::move(host));
  }
  return absl::OkStatus();
}

void NetnsRun::Poll() {
  std::vector<pollfd> fds;
  std::vector<std::pair<Host*, Stream>> owners;
  fds.push_back({signals_->fd(), POLLIN, 0});
  owners.push_back({nullptr, Stream::kStdout});
  for (const std::unique_ptr<Host>& host : hosts_) {
    for (Stream stream : {Stream::kStdout, Stream::kStderr}) {
      const int fd = host->process->fd(stream);
      if (fd < 0) continue;
      fds.push_back({fd, POLLIN, 0});
      owners.push_back({host.get(), stream});
    }
  }
  // SIGCHLD and output wake the poll; the wait only bounds how late a
  // deadline is noticed.
  const absl::Time next_deadline = stopping_ ? kill_deadline_ : deadline_;
  const absl::Duration wait = std::clamp(
      next_deadline - absl::Now(), absl::ZeroDuration(), absl::Seconds(1));
  const int ready =
      ::poll(fds.data(), fds.size(),
             static_cast<int>(absl::ToInt64Milliseconds(wait)) + 1);
  if (ready > 0) {
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents != 0) ReadOutput(*owners[i].first, owners[i].second);
    }
  }
  HandleSignals();
  // SIGCHLD only wakes the poll: checking every host each round also covers
  // signals that coalesced.
  ReapExited();
  const absl::Time now = absl::Now();
  if (!stopping_ && now >= deadline_) {
    Message(absl::StrCat("--timeout=", absl::FormatDuration(options_.timeout),
                         " reached: stopping the hosts"));
    Finish(kExitTimeout);
  } else if (stopping_ && !killed_ && now >= kill_deadline_) {
    KillAll();
  }
}

void NetnsRun::ReadOutput(Host& host, Stream stream) {
  std::string bytes;
  const bool open = host.process->ReadAvailable(stream, &bytes);
  const bool is_stdout = stream == Stream::kStdout;
  LineBuffer& lines = is_stdout ? host.stdout_lines : host.stderr_lines;
  std::ostream& out = is_stdout ? std::cout : std::cerr;
  lines.Append(bytes);
  std::string line;
  while (lines.NextLine(&line)) out << line << '\n';
  if (!open && lines.TakeRest(&line)) out << line << '\n';
  out.flush();
}

void NetnsRun::FlushRest(Host& host) {
  ReadOutput(host, Stream::kStdout);
  ReadOutput(host, Stream::kStderr);
  std::string line;
  if (host.stdout_lines.TakeRest(&line)) std::cout << line << std::endl;
  if (host.stderr_lines.TakeRest(&line)) std::cerr << line << std::endl;
}

void NetnsRun::ReapExited() {
  for (const std::unique_ptr<Host>& host : hosts_) {
    if (host->process->running() && host->process->TryReap()) {
      HandleExit(*host);
    }
  }
}

void NetnsRun::HandleExit(Host& host) {
  // Its last lines first, then the verdict.
  ReadOutput(host, Stream::kStdout);
  ReadOutput(host, Stream::kStderr);
  const int status = *host.process->wait_status();
  if (stopping_ || (WIFEXITED(status) && WEXITSTATUS(status) == 0)) return;
  Message(absl::StrCat(Describe(host), " ", DescribeWaitStatus(status),
                       AnyRunning() ? "; stopping the other hosts" : ""));
  Finish(kExitFailure);
}

void NetnsRun::HandleSignals() {
  for (int signal : signals_->Drain()) {
    if (signal != SIGINT && signal != SIGTERM) continue;
    if (!stopping_) {
      Message(absl::StrCat(SignalName(signal), ": stopping the hosts"));
      Finish(128 + signal);
    } else if (!killed_ && AnyRunning()) {
      Message(absl::StrCat(SignalName(signal), " again: killing the hosts"));
      KillAll();
    }
  }
}

void NetnsRun::Finish(int exit_code) {
  if (!exit_code_.has_value()) exit_code_ = exit_code;
  Stop();
}

void NetnsRun::Stop() {
  if (stopping_) return;
  stopping_ = true;
  kill_deadline_ = absl::Now() + options_.kill_grace;
  for (const std::unique_ptr<Host>& host : hosts_) {
    host->process->SignalGroup(SIGTERM).IgnoreError();
  }
}

void NetnsRun::KillAll() {
  killed_ = true;
  for (const std::unique_ptr<Host>& host : hosts_) {
    if (!host->process->running()) continue;
    Message(absl::StrCat(Describe(*host), " did not stop after SIGTERM within ",
                         absl::FormatDuration(options_.kill_grace),
                         "; killing it"));
    host->process->SignalGroup(SIGKILL).IgnoreError();
  }
  for (const std::unique_ptr<Host>& host : hosts_) {
    if (host->process->running()) {
      host->process->Reap();
      HandleExit(*host);
    }
  }
}

bool NetnsRun::AnyRunning() const {
  for (const std::unique_ptr<Host>& host : hosts_) {
    if (host->process->running()) return true;
  }
  return false;
}

std::string NetnsRun::Describe(const Host& host) const {
  return absl::StrCat(
      "host ", host.index, " (", topology_->namespace_name(host.index), ", ",
      topology_->address(host.index), ", pid ", host.process->pid(), ")");
}

void NetnsRun::WriteTraffic(const std::vector<LinkTopology::Counters>& before) {
  absl::StatusOr<std::vector<LinkTopology::Counters>> after =
      topology_->ReadCounters();
  if (!after.ok()) {
    Message(
        absl::StrCat("--counters_out not written: ", after.status().message()));
    Finish(kExitFailure);
    return;
  }
  std::vector<HostTraffic> traffic;
  for (int index = 0; index < topology_->hosts(); ++index) {
    HostTraffic host;
    host.host = index;
    host.namespace_name = topology_->namespace_name(index);
    host.address = topology_->address(index);
    host.rx_bytes = (*after)[index].rx_bytes - before[index].rx_bytes;
    host.tx_bytes = (*after)[index].tx_bytes - before[index].tx_bytes;
    traffic.push_back(std::move(host));
  }
  if (absl::Status status =
          WriteTrafficJson(options_.counters_out, options_.link, traffic);
      !status.ok()) {
    Message(status.message());
    Finish(kExitFailure);
  }
}

}  // namespace

int RunNetns(const NetnsOptions& options) {
  NetnsRun run(options);
  return run.Run();
}

}  // namespace entrograd::link_emulation
