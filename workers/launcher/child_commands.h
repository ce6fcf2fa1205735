// The command lines of the processes a launch starts, as pure functions of
// LaunchOptions so they can be checked without starting anything.
#ifndef ENTROGRAD_WORKERS_LAUNCHER_CHILD_COMMANDS_H_
#define ENTROGRAD_WORKERS_LAUNCHER_CHILD_COMMANDS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "workers/launcher/launch_options.h"

namespace entrograd::launcher {

// Flags of the aggregator: gRPC and metrics on free ports of `host` (it
// prints them, see ParseAggregatorPortLine) and the round timeout. `host` is
// loopback, or the aggregator's address inside its namespace under --link.
std::vector<std::string> AggregatorArgs(const LaunchOptions& options,
                                        const std::string& host = "127.0.0.1");

// The ports from the aggregator's line "entrograd-aggregator: serving on
// port P, metrics on port M"; false for any other line.
struct AggregatorPorts {
  int port = 0;
  int metrics_port = 0;
};
bool ParseAggregatorPortLine(const std::string& line, AggregatorPorts* ports);

// Flags of worker `rank` joining job `job_id` at the shards `shards`
// ("host:port", in shard order), then options.extra_worker_args split on
// whitespace.
std::vector<std::string> WorkerArgs(const LaunchOptions& options, int rank,
                                    const std::vector<std::string>& shards,
                                    const std::string& job_id);

// The workers' --merge_timeout: options.round_timeout plus one minute.
absl::Duration WorkerMergeTimeout(const LaunchOptions& options);

// OK unless options.extra_worker_args sets a flag WorkerArgs already passes
// (say --dense_below=0, or --nodense_below): the worker would take the later
// value while summary.json recorded the launcher's. INVALID_ARGUMENT names
// --extra_worker_args and the flag.
absl::Status CheckExtraWorkerArgs(const LaunchOptions& options);

// <out>/rank<r>: the worker's own output directory (checkpoints).
std::string WorkerOutDir(const LaunchOptions& options, int rank);

// A job id unique on this machine: "local-<yyyymmdd-hhmmss>-<pid>".
std::string GenerateJobId();

}  // namespace entrograd::launcher

#endif  // ENTROGRAD_WORKERS_LAUNCHER_CHILD_COMMANDS_H_
