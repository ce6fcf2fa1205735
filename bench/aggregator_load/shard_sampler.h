// Samples every shard while the load runs: resident memory from /proc
// (peak and current) and the rounds and bytes counters from its /metrics,
// at a fixed interval on its own thread, so the report can show RSS staying
// flat and throughput over time.
//
// Thread safety: Start/Stop from one thread; samples() after Stop.
#ifndef ENTROGRAD_BENCH_AGGREGATOR_LOAD_SHARD_SAMPLER_H_
#define ENTROGRAD_BENCH_AGGREGATOR_LOAD_SHARD_SAMPLER_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace entrograd::bench {

// One shard's counters at one moment (-1 where unreadable).
struct ShardReading {
  int64_t peak_rss_bytes = -1;
  int64_t rss_bytes = -1;
  double rounds_completed = -1;
  double rounds_aborted = -1;
  double rounds_rejected = -1;
  double rejects = -1;
  double uplink_wire_bytes = -1;
  double downlink_wire_bytes = -1;
  double duplicates = -1;
};

struct ShardTarget {
  pid_t pid = 0;
  int metrics_port = 0;
};

// Reads one shard now (a /proc read and one scrape).
ShardReading ReadShard(const ShardTarget& target);

class ShardSampler {
 public:
  struct Sample {
    double seconds = 0;  // since Start
    std::vector<ShardReading> shards;
  };

  ShardSampler(std::vector<ShardTarget> targets, absl::Duration interval)
      : targets_(std::move(targets)), interval_(interval) {}
  ~ShardSampler() { Stop(); }

  // Takes a sample now and then every interval until Stop.
  void Start();
  // Takes a last sample and joins the thread. Idempotent.
  void Stop();
  std::vector<Sample> samples() const;

 private:
  void Loop();
  void TakeSample();

  const std::vector<ShardTarget> targets_;
  const absl::Duration interval_;
  absl::Time start_;
  absl::Notification stop_;
  std::thread thread_;
  mutable absl::Mutex mutex_;
  std::vector<Sample> samples_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace entrograd::bench

#endif  // ENTROGRAD_BENCH_AGGREGATOR_LOAD_SHARD_SAMPLER_H_
