// The load harness's results: per shard rounds/s, bytes/s, errors and peak
// RSS over time (from the sampler), round latency percentiles and client
// errors (from the generator); written as a JSON file and printed as a
// short table.
//
// Thread safety: pure functions.
#ifndef ENTROGRAD_BENCH_AGGREGATOR_LOAD_LOAD_REPORT_H_
#define ENTROGRAD_BENCH_AGGREGATOR_LOAD_LOAD_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "bench/aggregator_load/load_generator.h"
#include "bench/aggregator_load/load_options.h"
#include "bench/aggregator_load/shard_sampler.h"

namespace entrograd::bench {

struct LoadReport {
  LoadOptions options;
  LoadResult result;
  std::vector<std::string> shard_addresses;
  // Each shard when every client had joined (the clock's start), and the
  // samples taken during and after the run (the last one after it).
  std::vector<ShardReading> baseline;
  std::vector<ShardSampler::Sample> samples;
  // How each shard ended on SIGTERM ("exited with status 0").
  std::vector<std::string> shard_exits;
};

// The q-quantile (0..1) by nearest rank; 0 for no values.
double Quantile(std::vector<double> values, double q);

// Client errors, plus every shard's aborted and rejected rounds, rejected
// messages, unreadable metrics, and a shard that did not exit 0.
int64_t TotalErrors(const LoadReport& report);

// The report as one JSON object (options, per-shard throughput, latency,
// RSS series, errors).
std::string LoadReportJson(const LoadReport& report);

// A few lines for stdout: one row per shard and the totals.
std::string LoadReportTable(const LoadReport& report);

// Writes `text` to `path`; INTERNAL when it cannot.
absl::Status WriteTextFile(const std::string& path, const std::string& text);

}  // namespace entrograd::bench

#endif  // ENTROGRAD_BENCH_AGGREGATOR_LOAD_LOAD_REPORT_H_
