// The whole load run: start the shard processes, sample them, drive the
// load through them, stop them (SIGTERM: a clean drain is part of "zero
// errors") and collect the report.
#ifndef ENTROGRAD_BENCH_AGGREGATOR_LOAD_LOAD_HARNESS_H_
#define ENTROGRAD_BENCH_AGGREGATOR_LOAD_LOAD_HARNESS_H_

#include "absl/status/statusor.h"
#include "bench/aggregator_load/load_options.h"
#include "bench/aggregator_load/load_report.h"

namespace entrograd::bench {

// Errors: a shard that does not start (its log in the message), an output
// directory that cannot be made. Failures during the load are in the
// report (TotalErrors), not here. Every shard is stopped before returning.
absl::StatusOr<LoadReport> RunLoadHarness(const LoadOptions& options);

}  // namespace entrograd::bench

#endif  // ENTROGRAD_BENCH_AGGREGATOR_LOAD_LOAD_HARNESS_H_
