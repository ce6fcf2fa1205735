#include "workers/launcher/child_commands.h"

#include <unistd.h>

#include <cstdio>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace entrograd::launcher {

namespace {

// Shortest text that parses back to the same double ("0.01", not
// "0.01000000000000000021").
std::string DoubleFlag(double value) {
  char buffer[32];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    double back = 0;
    if (absl::SimpleAtod(buffer, &back) && back == value) break;
  }
  return buffer;
}

// options.extra_worker_args split on whitespace: what WorkerArgs appends
// and CheckExtraWorkerArgs checks.
std::vector<absl::string_view> ExtraWorkerArgs(const LaunchOptions& options) {
  return absl::StrSplit(options.extra_worker_args, absl::ByAnyChar(" \t\n"),
                        absl::SkipEmpty());
}

}  // namespace

std::vector<std::string> AggregatorArgs(const LaunchOptions& options,
                                        const std::string& host) {
  return {
      absl::StrCat("--listen=", host, ":0"),
      absl::StrCat("--metrics_listen=", host, ":0"),
      absl::StrCat("--round_timeout=",
                   absl::FormatDuration(options.round_timeout)),
  };
}

bool ParseAggregatorPortLine(const std::string& line, AggregatorPorts* ports) {
  constexpr absl::string_view kPrefix =
      "entrograd-aggregator: serving on port ";
  constexpr absl::string_view kMiddle = ", metrics on port ";
  absl::string_view rest(line);
  const size_t start = rest.find(kPrefix);
  if (start == absl::string_view::npos) return false;
  rest.remove_prefix(start + kPrefix.size());
  const size_t middle = rest.find(kMiddle);
  if (middle == absl::string_view::npos) return false;
  AggregatorPorts parsed;
  if (!absl::SimpleAtoi(rest.substr(0, middle), &parsed.port) ||
      !absl::SimpleAtoi(rest.substr(middle + kMiddle.size()),
                        &parsed.metrics_port) ||
      parsed.port <= 0 || parsed.port > 65535) {
    return false;
  }
  *ports = parsed;
  return true;
}

std::vector<std::string> WorkerArgs(const LaunchOptions& options, int rank,
                                    const std::vector<std::string>& shards,
                                    const std::string& job_id) {
  std::vector<std::string> args = {
      absl::StrCat("--shards=", absl::StrJoin(shards, ",")),
      absl::StrCat("--world_size=", options.workers),
      absl::StrCat("--rank=", rank),
      absl::StrCat("--job_id=", job_id),
      absl::StrCat("--policy=", options.policy),
      absl::StrCat("--rho=", DoubleFlag(options.rho)),
      absl::StrCat("--threshold=", DoubleFlag(options.threshold)),
      absl::StrCat("--epochs=", options.epochs),
      absl::StrCat("--max_steps=", options.max_steps),
      absl::StrCat("--batch_size=", options.batch_size),
      absl::StrCat("--lr=", DoubleFlag(options.lr)),
      absl::StrCat("--lr_schedule=", options.lr_schedule),
      absl::StrCat("--momentum=", DoubleFlag(options.momentum)),
      absl::StrCat("--seed=", options.seed),
      absl::StrCat("--model=", options.model),
      absl::StrCat("--eval_every=", options.eval_every),
      absl::StrCat("--eval_each_epoch=",
                   options.eval_each_epoch ? "true" : "false"),
      absl::StrCat("--eval_samples=", options.eval_samples),
      absl::StrCat("--validation=", options.validation),
      absl::StrCat("--warmup_steps=", options.warmup_steps),
      absl::StrCat("--dense_below=", options.dense_below),
      absl::StrCat("--merged_keep_factor=",
                   DoubleFlag(options.merged_keep_factor)),
      absl::StrCat("--value_type=", options.value_type),
      absl::StrCat("--out=", WorkerOutDir(options, rank)),
      absl::StrCat("--checkpoint_interval=", options.checkpoint_interval),
      absl::StrCat("--merge_timeout=",
                   absl::FormatDuration(WorkerMergeTimeout(options))),
      absl::StrCat("--data_dir=", options.data_dir),
  };
  for (absl::string_view extra : ExtraWorkerArgs(options)) {
    args.emplace_back(extra);
  }
  return args;
}

absl::Duration WorkerMergeTimeout(const LaunchOptions& options) {
  return options.round_timeout + absl::Minutes(1);
}

absl::Status CheckExtraWorkerArgs(const LaunchOptions& options) {
  LaunchOptions without_extra = options;
  without_extra.extra_worker_args.clear();
  // The names of what the launcher passes, from the one list that passes it.
  std::vector<std::string> launcher_set;
  for (const std::string& arg : WorkerArgs(without_extra, 0, {""}, "")) {
    launcher_set.push_back(
        std::string(absl::StripPrefix(arg.substr(0, arg.find('=')), "--")));
  }
  for (absl::string_view token : ExtraWorkerArgs(options)) {
    if (!absl::StartsWith(token, "-")) continue;  // a value, not a flag
    absl::string_view name = token.substr(0, token.find('='));
    name = absl::StripPrefix(absl::StripPrefix(name, "-"), "-");
    for (const std::string& set : launcher_set) {
      if (name == set || name == absl::StrCat("no", set)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--extra_worker_args must not set --", set,
            ": the launcher passes it to every worker itself (entrograd-launch "
            "--help lists its flags); got \"", options.extra_worker_args,
            "\""));
      }
    }
  }
  return absl::OkStatus();
}

std::string WorkerOutDir(const LaunchOptions& options, int rank) {
  return absl::StrCat(options.out_dir, "/rank", rank);
}

std::string GenerateJobId() {
  return absl::StrCat(
      "local-",
      absl::FormatTime("%Y%m%d-%H%M%S", absl::Now(), absl::LocalTimeZone()),
      "-", ::getpid());
}

}  // namespace entrograd::launcher
