#include "bench/aggregator_load/shard_sampler.h"

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "bench/aggregator_load/metrics_scrape.h"
#include "bench/aggregator_load/process_memory.h"

namespace entrograd::bench {

ShardReading ReadShard(const ShardTarget& target) {
  ShardReading reading;
  if (absl::StatusOr<ProcessMemory> memory = ReadProcessMemory(target.pid);
      memory.ok()) {
    reading.peak_rss_bytes = memory->peak_rss_bytes;
    reading.rss_bytes = memory->rss_bytes;
  }
  absl::StatusOr<std::string> text = ScrapeMetrics(target.metrics_port);
  if (!text.ok()) return reading;
  auto value = [&](const std::string& series) {
    return SampleValue(*text, series).value_or(-1);
  };
  reading.rounds_completed =
      value("entrograd_rounds_total{outcome=\"completed\"}");
  reading.rounds_aborted = value("entrograd_rounds_total{outcome=\"aborted\"}");
  reading.rounds_rejected =
      value("entrograd_rounds_total{outcome=\"rejected\"}");
  reading.rejects = SumSamples(*text, "entrograd_rejects_total");
  reading.uplink_wire_bytes = value("entrograd_uplink_wire_bytes_total");
  reading.downlink_wire_bytes = value("entrograd_downlink_wire_bytes_total");
  reading.duplicates = value("entrograd_duplicate_contributions_total");
  return reading;
}

void ShardSampler::Start() {
  start_ = absl::Now();
  TakeSample();
  thread_ = std::thread([this] { Loop(); });
}

void ShardSampler::Stop() {
  if (!thread_.joinable()) return;
  stop_.Notify();
  thread_.join();
  TakeSample();
}

std::vector<ShardSampler::Sample> ShardSampler::samples() const {
  absl::MutexLock lock(&mutex_);
  return samples_;
}

void ShardSampler::Loop() {
  while (!stop_.WaitForNotificationWithTimeout(interval_)) TakeSample();
}

void ShardSampler::TakeSample() {
  Sample sample;
  sample.seconds = absl::ToDoubleSeconds(absl::Now() - start_);
  for (const ShardTarget& target : targets_) {
    sample.shards.push_back(ReadShard(target));
  }
  absl::MutexLock lock(&mutex_);
  samples_.push_back(std::move(sample));
}

}  // namespace entrograd::bench
