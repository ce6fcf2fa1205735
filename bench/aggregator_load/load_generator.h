// The load generator: jobs x ranks real entrograd::Client instances in this
// process, each driven by its own thread the way a training worker drives
// it (send every layer of a step, wait for every merged layer, MarkApplied),
// replaying pre-generated sparse payloads. Records, per rank, when each
// round's contribution was handed to the client and when its merged update
// was returned, so round latency is measured on one clock.
//
// Thread safety: Run is called once, from one thread.
#ifndef ENTROGRAD_BENCH_AGGREGATOR_LOAD_LOAD_GENERATOR_H_
#define ENTROGRAD_BENCH_AGGREGATOR_LOAD_LOAD_GENERATOR_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "bench/aggregator_load/load_options.h"

namespace entrograd::bench {

struct LoadResult {
  // From the first step's start (every client connected) to the last
  // rank's MarkApplied of the last step.
  absl::Duration elapsed;
  // Rounds (job, step, layer) every rank of the job received.
  int64_t rounds_completed = 0;
  // Round latency, seconds: the latest arrival of the merged update at any
  // rank minus the latest hand-over of a contribution to its client. Each
  // rank waits for its layers in send order, so an update that overtakes
  // an earlier layer's is counted when that one is done (an upper bound).
  std::vector<double> round_latency_seconds;
  // Failed Connect / SendLayer / WaitMerged calls, and the first few.
  int64_t errors = 0;
  std::vector<std::string> first_errors;
  // Summed over every client.
  int64_t uplink_wire_bytes = 0;
  int64_t downlink_wire_bytes = 0;
  int64_t reconnects = 0;
};

// Runs the load against `shard_addresses`. `on_connected` is called once
// every client has joined, just before the clock starts (the harness takes
// its baseline scrape there). Never hangs past options.run_timeout plus
// the clients' own bounds: a rank that fails stops, and the others' rounds
// then end with an error too.
LoadResult RunLoad(const LoadOptions& options,
                   const std::vector<std::string>& shard_addresses,
                   const std::function<void()>& on_connected);

}  // namespace entrograd::bench

#endif  // ENTROGRAD_BENCH_AGGREGATOR_LOAD_LOAD_GENERATOR_H_
