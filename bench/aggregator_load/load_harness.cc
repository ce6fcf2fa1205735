#include "bench/aggregator_load/load_harness.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/aggregator_load/load_generator.h"
#include "bench/aggregator_load/shard_process.h"
#include "bench/aggregator_load/shard_sampler.h"

namespace entrograd::bench {

absl::StatusOr<LoadReport> RunLoadHarness(const LoadOptions& options) {
  std::error_code error;
  std::filesystem::create_directories(options.out_dir, error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot create ", options.out_dir, ": ", error.message()));
  }
  // Every job at once, and room for its rounds in flight: the shard's
  // limits must not be what the load measures.
  const std::vector<std::string> flags = {
      absl::StrCat("--round_timeout=", absl::FormatDuration(options.round_timeout)),
      absl::StrCat("--max_jobs=", std::max(64, options.jobs)),
      "--log_level=warning",
  };
  std::vector<std::unique_ptr<ShardProcess>> shards;
  LoadReport report;
  report.options = options;
  std::vector<ShardTarget> targets;
  for (int s = 0; s < options.shards; ++s) {
    absl::StatusOr<std::unique_ptr<ShardProcess>> shard = ShardProcess::Start(
        options.aggregator_path,
        [&] {
          std::vector<std::string> f = flags;
          f.push_back(absl::StrCat("--shard_name=shard", s));
          return f;
        }(),
        absl::StrCat(options.out_dir, "/shard", s, ".log"));
    if (!shard.ok()) return shard.status();  // started ones die with `shards`
    report.shard_addresses.push_back((*shard)->address());
    targets.push_back({(*shard)->pid(), (*shard)->metrics_port()});
    shards.push_back(std::move(*shard));
  }
  ShardSampler sampler(targets, options.sample_interval);
  report.result = RunLoad(options, report.shard_addresses, [&] {
    for (const ShardTarget& target : targets) {
      report.baseline.push_back(ReadShard(target));
    }
    sampler.Start();
  });
  sampler.Stop();
  if (report.baseline.empty()) {  // RunLoad returned before any client
    for (const ShardTarget& target : targets) {
      report.baseline.push_back(ReadShard(target));
    }
  }
  report.samples = sampler.samples();
  if (report.samples.empty()) {
    ShardSampler::Sample last;
    for (const ShardTarget& target : targets) {
      last.shards.push_back(ReadShard(target));
    }
    report.samples.push_back(std::move(last));
  }
  for (auto& shard : shards) report.shard_exits.push_back(shard->Stop());
  return report;
}

}  // namespace entrograd::bench
