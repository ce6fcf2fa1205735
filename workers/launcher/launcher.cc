#include "workers/launcher/launcher.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "workers/launcher/child_commands.h"
#include "workers/launcher/child_log.h"
#include "workers/launcher/child_process.h"
#include "workers/launcher/format_units.h"
#include "workers/launcher/line_buffer.h"
#include "workers/launcher/run_record.h"
#include "workers/launcher/run_summary.h"
#include "workers/launcher/signal_watch.h"
#include "workers/link_emulation/link_rate.h"
#include "workers/link_emulation/link_topology.h"
#include "workers/run_format/run_summary.h"
#include "workers/run_format/worker_event.h"

namespace entrograd::launcher {

using run_format::CompressionRatio;
using run_format::DoneEvent;
using run_format::EpochEvent;
using run_format::ErrorEvent;
using run_format::LinkTraffic;
using run_format::ParseWorkerEvent;
using run_format::RunSummary;
using run_format::StartEvent;
using run_format::StepEvent;
using run_format::WorkerEvent;

namespace {

namespace fs = std::filesystem;

// Poll wake-ups bound how late a deadline is noticed.
constexpr absl::Duration kPollInterval = absl::Milliseconds(100);
// Log lines quoted when a child fails.
constexpr size_t kFailureTailLines = 12;
constexpr absl::string_view kPrefix = "entrograd-launch: ";

using Stream = ChildProcess::Stream;

// One started process with its log and line splitting.
struct Child {
  Child(std::string name, int rank, int shard = -1)
      : name(std::move(name)), rank(rank), shard(shard) {}

  const std::string name;  // "aggregator", "aggregator 1", "rank 3"
  const int rank;          // -1: an aggregator
  const int shard;         // the aggregator's shard; -1: a worker
  std::unique_ptr<ChildProcess> process;
  ChildLog log{kFailureTailLines};
  LineBuffer stdout_lines;
  LineBuffer stderr_lines;
  bool sent_done = false;
  bool warned_malformed = false;
};

const char* SignalName(int signal) {
  return signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "signal";
}

class LaunchRun {
 public:
  LaunchRun(const LaunchOptions& options, ProgressDisplay& display)
      : options_(options),
        display_(display),
        record_(options.workers),
        job_id_(options.job_id.empty() ? GenerateJobId() : options.job_id) {}

  LaunchResult Run();

 private:
  enum class Phase { kStartingAggregator, kTraining, kStopping };

  absl::Status PrepareOutDir();
  // Under --link: the namespaces, links and rate limits (hosts 0..S-1 are
  // the aggregator shards, host S+r worker r). Removed when the run object
  // goes.
  absl::Status CreateLinks();
  // `argv` as run on `host`: inside its namespace under --link.
  absl::StatusOr<std::unique_ptr<ChildProcess>> SpawnOnHost(
      int host, const std::string& binary, std::vector<std::string> args);
  std::string HostAddress(int host) const;
  std::optional<LinkTraffic> MeasureLinkTraffic() const;
  int WorkerHost(int rank) const { return options_.shards + rank; }
  absl::Status StartAggregators();
  absl::Status StartWorkers();

  // One poll round: output, signals, exits, deadlines.
  void Poll();
  void ReadOutput(Child& child, Stream stream);
  void HandleLine(Child& child, Stream stream, const std::string& line);
  void HandleAggregatorLine(Child& child, const std::string& line);
  void HandleWorkerLine(Child& child, const std::string& line);
  void HandleEvent(Child& child, const WorkerEvent& event);
  void ReapExited();
  void HandleExit(Child& child);
  void HandleSignal(int signal);

  // Records the outcome (the first one wins) and stops everything.
  void Succeed();
  void Fail(Child* child, const std::string& reason);
  void Stop();
  void KillAll();

  bool AnyRunning() const;
  ProgressSnapshot Snapshot() const;
  std::string Path(absl::string_view name) const {
    return absl::StrCat(options_.out_dir, "/", name);
  }
  LaunchResult Finish();

  const LaunchOptions& options_;
  ProgressDisplay& display_;
  RunRecord record_;
  const std::string job_id_;
  std::unique_ptr<SignalWatch> signals_;
  std::unique_ptr<link_emulation::LinkTopology> links_;
  std::vector<link_emulation::LinkTopology::Counters> counters_at_start_;
  // The aggregator shards first, then the workers in rank order.
  std::vector<std::unique_ptr<Child>> children_;
  // Each shard's ports, once its port line came.
  std::vector<std::optional<AggregatorPorts>> shard_ports_;
  Phase phase_ = Phase::kStartingAggregator;
  std::optional<LaunchResult> outcome_;
  bool succeeded_ = false;
  bool killed_ = false;
  absl::Time start_time_;
  absl::Time aggregator_deadline_;
  absl::Time kill_deadline_;
  absl::Time first_lead_step_time_;
};

LaunchResult LaunchRun::Run() {
  start_time_ = absl::Now();
  if (absl::Status status = PrepareOutDir(); !status.ok()) {
    return {status, kExitFailure};
  }
  if (absl::Status status = CreateLinks(); !status.ok()) {
    display_.Error(absl::StrCat(kPrefix, status.message()));
    return {status, kExitFailure};
  }
  absl::StatusOr<std::unique_ptr<SignalWatch>> signals = SignalWatch::Create();
  if (!signals.ok()) return {signals.status(), kExitFailure};
  signals_ = std::move(*signals);
  if (absl::Status status = StartAggregators(); !status.ok()) {
    return {status, kExitFailure};
  }
  aggregator_deadline_ = absl::Now() + options_.aggregator_start_timeout;
  while (AnyRunning()) Poll();
  return Finish();
}

absl::Status LaunchRun::PrepareOutDir() {
  std::error_code error;
  for (int rank = 0; rank < options_.workers; ++rank) {
    fs::create_directories(WorkerOutDir(options_, rank), error);
    if (error) {
      return absl::InternalError(absl::StrCat("--out: cannot create ",
                                              WorkerOutDir(options_, rank),
                                              ": ", error.message()));
    }
  }
  // Results of an earlier run in the same directory would pass for this
  // one's if it fails.
  for (const char* stale : {"summary.json", "summary.md", "plot.svg"}) {
    fs::remove(Path(stale), error);
  }
  return absl::OkStatus();
}

absl::Status LaunchRun::CreateLinks() {
  if (options_.link.empty()) return absl::OkStatus();
  absl::StatusOr<link_emulation::LinkRate> rate =
      link_emulation::ParseLinkRate(options_.link);
  if (!rate.ok()) return rate.status();
  if (absl::Status status = link_emulation::CheckLinkEmulationAvailable();
      !status.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--link=", options_.link, " cannot run here: ", status.message()));
  }
  absl::StatusOr<std::unique_ptr<link_emulation::LinkTopology>> links =
      link_emulation::LinkTopology::Create(options_.shards + options_.workers,
                                           *rate);
  if (!links.ok()) {
    return absl::Status(
        links.status().code(),
        absl::StrCat("--link=", options_.link, ": ", links.status().message()));
  }
  links_ = std::move(*links);
  absl::StatusOr<std::vector<link_emulation::LinkTopology::Counters>> counters =
      links_->ReadCounters();
  if (!counters.ok()) return counters.status();
  counters_at_start_ = std::move(*counters);
  display_.Message(absl::StrCat(
      kPrefix, "link emulation: ", links_->hosts(),
      " network namespaces on one bridge, every link ", options_.link,
      " both ways (", options_.shards == 1 ? "aggregator" : "aggregators",
      " at ", links_->address(0),
      options_.shards == 1
          ? std::string()
          : absl::StrCat("..", links_->address(options_.shards - 1)),
      ")"));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ChildProcess>> LaunchRun::SpawnOnHost(
    int host, const std::string& binary, std::vector<std::string> args) {
  if (links_ == nullptr) return ChildProcess::Spawn(binary, args);
  args.insert(args.begin(), binary);
  std::vector<std::string> command = links_->CommandInHost(host, args);
  const std::string program = command.front();
  command.erase(command.begin());
  return ChildProcess::Spawn(program, command);
}

std::string LaunchRun::HostAddress(int host) const {
  return links_ == nullptr ? "127.0.0.1" : links_->address(host);
}

std::optional<LinkTraffic> LaunchRun::MeasureLinkTraffic() const {
  if (links_ == nullptr) return std::nullopt;
  absl::StatusOr<std::vector<link_emulation::LinkTopology::Counters>> now =
      links_->ReadCounters();
  if (!now.ok() || now->size() != counters_at_start_.size()) {
    display_.Error(absl::StrCat(kPrefix,
                                "warning: cannot read the link "
                                "counters: ",
                                now.status().message()));
    return std::nullopt;
  }
  LinkTraffic traffic;
  traffic.rate = options_.link;
  for (size_t host = 0; host < now->size(); ++host) {
    const int64_t sent =
        (*now)[host].tx_bytes - counters_at_start_[host].tx_bytes;
    (static_cast<int>(host) < options_.shards ? traffic.aggregator_sent
                                              : traffic.workers_sent) += sent;
  }
  return traffic;
}

absl::Status LaunchRun::StartAggregators() {
  shard_ports_.assign(options_.shards, std::nullopt);
  for (int shard = 0; shard < options_.shards; ++shard) {
    // One shard keeps the names it always had.
    const bool one = options_.shards == 1;
    auto child = std::make_unique<Child>(
        one ? std::string("aggregator") : absl::StrCat("aggregator ", shard),
        -1, shard);
    if (absl::Status status = child->log.Open(Path(
            one ? std::string("aggregator.log")
                : absl::StrCat("aggregator", shard, ".log")));
        !status.ok()) {
      return status;
    }
    absl::StatusOr<std::unique_ptr<ChildProcess>> process =
        SpawnOnHost(shard, options_.aggregator_bin,
                    AggregatorArgs(options_, HostAddress(shard)));
    if (!process.ok()) return process.status();
    child->process = std::move(*process);
    children_.push_back(std::move(child));
  }
  return absl::OkStatus();
}

absl::Status LaunchRun::StartWorkers() {
  std::vector<std::string> shard_addresses;
  for (int shard = 0; shard < options_.shards; ++shard) {
    const AggregatorPorts& ports = *shard_ports_[shard];
    shard_addresses.push_back(
        absl::StrCat(HostAddress(shard), ":", ports.port));
    display_.Message(absl::StrCat(
        kPrefix, children_[shard]->name, " (pid ",
        children_[shard]->process->pid(), ") serving on ",
        shard_addresses.back(), ", metrics on http://", HostAddress(shard),
        ":", ports.metrics_port, "/metrics"));
  }
  for (int rank = 0; rank < options_.workers; ++rank) {
    auto child = std::make_unique<Child>(absl::StrCat("rank ", rank), rank);
    if (absl::Status status =
            child->log.Open(Path(absl::StrCat("rank", rank, ".log")));
        !status.ok()) {
      return status;
    }
    absl::StatusOr<std::unique_ptr<ChildProcess>> process =
        SpawnOnHost(WorkerHost(rank), options_.worker_bin,
                    WorkerArgs(options_, rank, shard_addresses, job_id_));
    if (!process.ok()) return process.status();
    child->process = std::move(*process);
    children_.push_back(std::move(child));
  }
  display_.Message(
      absl::StrCat(kPrefix, "job ", job_id_, ": ", options_.workers,
                   options_.workers == 1 ? " worker" : " workers", ", policy ",
                   options_.policy, ", logs in ", options_.out_dir, "/"));
  return absl::OkStatus();
}

void LaunchRun::Poll() {
  std::vector<pollfd> fds;
  std::vector<std::pair<Child*, Stream>> owners;
  fds.push_back({signals_->fd(), POLLIN, 0});
  owners.push_back({nullptr, Stream::kStdout});
  for (const std::unique_ptr<Child>& child : children_) {
    for (Stream stream : {Stream::kStdout, Stream::kStderr}) {
      const int fd = child->process->fd(stream);
      if (fd < 0) continue;
      fds.push_back({fd, POLLIN, 0});
      owners.push_back({child.get(), stream});
    }
  }
  const int ready =
      ::poll(fds.data(), fds.size(),
             static_cast<int>(absl::ToInt64Milliseconds(kPollInterval)));
  if (ready > 0) {
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents != 0) ReadOutput(*owners[i].first, owners[i].second);
    }
  }
  for (int signal : signals_->Drain()) {
    if (signal == SIGINT || signal == SIGTERM) HandleSignal(signal);
  }
  // SIGCHLD only wakes the poll: checking every child each round also
  // covers signals that coalesced.
  ReapExited();
  const absl::Time now = absl::Now();
  if (phase_ == Phase::kStartingAggregator && now >= aggregator_deadline_) {
    for (int shard = 0; shard < options_.shards; ++shard) {
      if (shard_ports_[shard].has_value()) continue;
      Fail(children_[shard].get(),
           absl::StrCat(
               "did not report its port within ",
               absl::FormatDuration(options_.aggregator_start_timeout)));
      break;
    }
  }
  if (options_.timeout > absl::ZeroDuration() && phase_ != Phase::kStopping &&
      now >= start_time_ + options_.timeout) {
    Fail(nullptr, absl::StrCat("the run exceeded --timeout=",
                               absl::FormatDuration(options_.timeout)));
  }
  if (phase_ == Phase::kStopping && !killed_ && now >= kill_deadline_) {
    KillAll();
  }
}

void LaunchRun::ReadOutput(Child& child, Stream stream) {
  std::string bytes;
  const bool open = child.process->ReadAvailable(stream, &bytes);
  LineBuffer& lines =
      stream == Stream::kStdout ? child.stdout_lines : child.stderr_lines;
  lines.Append(bytes);
  std::string line;
  while (lines.NextLine(&line)) HandleLine(child, stream, line);
  if (!open && lines.TakeRest(&line)) HandleLine(child, stream, line);
  child.log.Flush();
}

void LaunchRun::HandleLine(Child& child, Stream stream,
                           const std::string& line) {
  if (stream == Stream::kStderr) {
    child.log.AddLine(line);
  } else if (child.rank < 0) {
    HandleAggregatorLine(child, line);
  } else {
    HandleWorkerLine(child, line);
  }
}

void LaunchRun::HandleAggregatorLine(Child& child, const std::string& line) {
  child.log.AddLine(line);
  AggregatorPorts ports;
  if (phase_ != Phase::kStartingAggregator ||
      !ParseAggregatorPortLine(line, &ports)) {
    return;
  }
  shard_ports_[child.shard] = ports;
  for (const std::optional<AggregatorPorts>& shard : shard_ports_) {
    if (!shard.has_value()) return;
  }
  phase_ = Phase::kTraining;
  if (absl::Status status = StartWorkers(); !status.ok()) {
    Fail(nullptr, absl::StrCat("cannot start the workers: ", status.message()));
  }
}

void LaunchRun::HandleWorkerLine(Child& child, const std::string& line) {
  absl::StatusOr<WorkerEvent> event = ParseWorkerEvent(line);
  if (event.ok()) {
    HandleEvent(child, *event);
    return;
  }
  // A line that meant to be an event but is not one is a worker bug: keep
  // it, say why, and warn once per rank; any other line is just logged.
  const bool meant_as_event =
      absl::IsInvalidArgument(event.status()) &&
      absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "{") &&
      absl::StrContains(line, "\"event\"");
  if (meant_as_event) {
    child.log.AddLine(absl::StrCat("[", kPrefix, "ignored a malformed event: ",
                                   event.status().message(), "] ", line));
    if (!child.warned_malformed) {
      child.warned_malformed = true;
      display_.Error(absl::StrCat(
          kPrefix, "warning: ", child.name, " printed a malformed event (",
          event.status().message(), "); see ", child.log.path()));
    }
    return;
  }
  child.log.AddLine(line);
}

void LaunchRun::HandleEvent(Child& child, const WorkerEvent& event) {
  record_.Add(child.rank, event);
  if (const auto* start = std::get_if<StartEvent>(&event)) {
    if (start->world_size != 0 && start->world_size != options_.workers) {
      Fail(&child, absl::StrCat("reports world_size ", start->world_size,
                                " but was started with --world_size=",
                                options_.workers));
    }
  } else if (std::holds_alternative<StepEvent>(event)) {
    if (child.rank != 0 || phase_ != Phase::kTraining) return;
    if (record_.lead_steps() == 1) first_lead_step_time_ = absl::Now();
    display_.Update(Snapshot());
  } else if (std::holds_alternative<EpochEvent>(event)) {
    if (child.rank != 0 || record_.epochs().empty()) return;
    const EpochPoint& point = record_.epochs().back();
    EpochReport report;
    report.epoch = static_cast<int64_t>(record_.epochs().size());
    report.epochs = record_.planned_epochs();
    report.train_loss = point.train_loss;
    report.test_accuracy = point.test_accuracy;
    report.test_loss = point.test_loss;
    report.ratio = CompressionRatio(point.bytes);
    report.wire_bytes = static_cast<double>(point.bytes.wire());
    display_.Epoch(report);
  } else if (std::holds_alternative<DoneEvent>(event)) {
    child.sent_done = true;
  } else if (const auto* error = std::get_if<ErrorEvent>(&event)) {
    Fail(&child, absl::StrCat("reported an error: ", error->message));
  }
}

void LaunchRun::ReapExited() {
  // By index: an aggregator's port line may start the workers (push_back).
  for (size_t i = 0; i < children_.size(); ++i) {
    Child& child = *children_[i];
    if (child.process->running() && child.process->TryReap()) {
      HandleExit(child);
    }
  }
}

void LaunchRun::HandleExit(Child& child) {
  // What it printed before exiting is in the pipes: read it first, so an
  // error event or a last log line is there for the verdict.
  ReadOutput(child, Stream::kStdout);
  ReadOutput(child, Stream::kStderr);
  const int status = *child.process->wait_status();
  const bool exited_zero = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (phase_ == Phase::kStopping) {
    if (child.rank < 0 && succeeded_ && !exited_zero) {
      display_.Error(absl::StrCat(kPrefix, "warning: the aggregator ",
                                  DescribeWaitStatus(status),
                                  " while stopping; see ", child.log.path()));
    }
    return;
  }
  if (child.rank < 0) {
    Fail(&child, absl::StrCat(DescribeWaitStatus(status), " unexpectedly"));
    return;
  }
  if (!exited_zero) {
    Fail(&child, DescribeWaitStatus(status));
    return;
  }
  if (!child.sent_done) {
    Fail(&child, "exited with status 0 without sending its done event");
    return;
  }
  for (const std::unique_ptr<Child>& worker : children_) {
    if (worker->rank < 0) continue;
    if (worker->process->running() || !worker->sent_done) return;
  }
  Succeed();
}

void LaunchRun::HandleSignal(int signal) {
  if (phase_ == Phase::kStopping) {
    if (!killed_) {
      display_.Error(absl::StrCat(kPrefix, SignalName(signal),
                                  " again: killing everything now"));
      KillAll();
    }
    return;
  }
  display_.Error(absl::StrCat(kPrefix, SignalName(signal),
                              ": stopping the aggregator and the workers"));
  outcome_ = LaunchResult{
      absl::CancelledError(absl::StrCat("interrupted by ", SignalName(signal))),
      128 + signal};
  Stop();
}

void LaunchRun::Succeed() {
  if (outcome_.has_value()) return;
  succeeded_ = true;
  outcome_ = LaunchResult{absl::OkStatus(), kExitSuccess};
  Stop();
}

void LaunchRun::Fail(Child* child, const std::string& reason) {
  if (outcome_.has_value()) return;
  const std::string who = child != nullptr ? child->name : "launcher";
  display_.Error(absl::StrCat(kPrefix, who, " failed: ", reason));
  if (child != nullptr) {
    const std::vector<std::string> tail = child->log.Tail();
    if (tail.empty()) {
      display_.Error(absl::StrCat("  (nothing in ", child->log.path(), ")"));
    } else {
      display_.Error(absl::StrCat("  last lines of ", child->log.path(), ":"));
      for (const std::string& line : tail) display_.Error("    " + line);
    }
  }
  outcome_ = LaunchResult{
      absl::AbortedError(absl::StrCat(who, " failed: ", reason)), kExitFailure};
  Stop();
}

void LaunchRun::Stop() {
  if (phase_ == Phase::kStopping) return;
  phase_ = Phase::kStopping;
  display_.Finish();
  kill_deadline_ = absl::Now() + options_.kill_grace;
  for (const std::unique_ptr<Child>& child : children_) {
    child->process->SignalGroup(SIGTERM).IgnoreError();
  }
}

void LaunchRun::KillAll() {
  killed_ = true;
  for (const std::unique_ptr<Child>& child : children_) {
    if (!child->process->running()) continue;
    display_.Error(absl::StrCat(kPrefix, child->name, " (pid ",
                                child->process->pid(),
                                ") did not stop after SIGTERM; killing it"));
    child->process->SignalGroup(SIGKILL).IgnoreError();
  }
  for (const std::unique_ptr<Child>& child : children_) {
    if (!child->process->running()) continue;
    child->process->Reap();
    HandleExit(*child);
  }
}

bool LaunchRun::AnyRunning() const {
  for (const std::unique_ptr<Child>& child : children_) {
    if (child->process->running()) return true;
  }
  return false;
}

ProgressSnapshot LaunchRun::Snapshot() const {
  ProgressSnapshot snapshot;
  const int64_t per_epoch = record_.steps_per_epoch();
  snapshot.epoch = record_.lead_epoch_ordinal();
  snapshot.epochs = record_.planned_epochs();
  snapshot.epoch_steps_done = record_.lead_steps_in_epoch();
  snapshot.epoch_steps = snapshot.epoch_steps_done;
  if (per_epoch > 0) {
    // The last epoch may be cut short by --max_steps.
    const int64_t left =
        record_.total_steps() - (snapshot.epoch - 1) * per_epoch;
    snapshot.epoch_steps =
        std::max(snapshot.epoch_steps_done, std::min(per_epoch, left));
  }
  snapshot.steps_done = record_.lead_steps();
  snapshot.total_steps = std::max(record_.total_steps(), snapshot.steps_done);
  snapshot.loss = record_.lead_loss();
  snapshot.ratio = CompressionRatio(record_.TotalBytes());
  const double elapsed =
      absl::ToDoubleSeconds(absl::Now() - first_lead_step_time_);
  if (snapshot.steps_done > 1 && elapsed > 0) {
    snapshot.steps_per_second = (snapshot.steps_done - 1) / elapsed;
  }
  return snapshot;
}

LaunchResult LaunchRun::Finish() {
  // Whatever is still buffered (a grandchild's last words) goes to the logs.
  for (const std::unique_ptr<Child>& child : children_) {
    ReadOutput(*child, Stream::kStdout);
    ReadOutput(*child, Stream::kStderr);
  }
  display_.Finish();
  LaunchResult result = outcome_.value_or(LaunchResult{
      absl::AbortedError("every process exited without an outcome"),
      kExitFailure});
  const double wall_seconds = absl::ToDoubleSeconds(absl::Now() - start_time_);
  if (!succeeded_) {
    display_.Error(absl::StrCat(kPrefix, "stopped after ",
                                FormatSeconds(wall_seconds), "; logs in ",
                                options_.out_dir, "/"));
    return result;
  }
  RunSummary summary = SummarizeRun(options_, job_id_, record_, wall_seconds);
  summary.link = MeasureLinkTraffic();
  if (absl::Status status = WriteRunResults(options_.out_dir, summary, record_);
      !status.ok()) {
    display_.Error(absl::StrCat(kPrefix, status.message()));
    return {status, kExitFailure};
  }
  display_.Message(absl::StrCat(
      kPrefix, "done in ", FormatSeconds(wall_seconds), ": ", summary.steps,
      " steps, test accuracy ",
      summary.test_accuracy.has_value() ? FormatPercent(*summary.test_accuracy)
                                        : std::string("-"),
      ", ", FormatRatio(summary.compression_ratio),
      " less traffic than dense (",
      FormatBytes(static_cast<double>(summary.bytes.wire())),
      " on the wire), replicas ",
      summary.replicas_identical ? "identical" : "DIFFER"));
  if (!summary.replicas_identical) {
    display_.Error(absl::StrCat(
        kPrefix,
        "warning: the ranks' final parameters differ (params_hash); "
        "data-parallel replicas must end bitwise equal"));
  }
  display_.Message(absl::StrCat(kPrefix, "results in ", options_.out_dir,
                                "/: summary.json, summary.md, plot.svg"));
  return result;
}

}  // namespace

LaunchResult RunLaunch(const LaunchOptions& options, ProgressDisplay& display) {
  LaunchRun run(options, display);
  return run.Run();
}

}  // namespace entrograd::launcher
