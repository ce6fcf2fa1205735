#include "bench/aggregator_load/load_flags.h"

#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"

#ifndef ENTROGRAD_LOAD_AGGREGATOR_PATH
#define ENTROGRAD_LOAD_AGGREGATOR_PATH ""
#endif

namespace {
const entrograd::bench::LoadOptions kDefaults{};
}  // namespace

ABSL_FLAG(int32_t, shards, kDefaults.shards, "aggregator processes");
ABSL_FLAG(int32_t, jobs, kDefaults.jobs, "jobs");
ABSL_FLAG(int32_t, ranks, kDefaults.ranks, "ranks per job (one client each)");
ABSL_FLAG(int32_t, layers, kDefaults.layers, "layers per job, mixed sizes");
ABSL_FLAG(int64_t, steps, kDefaults.steps, "steps per rank");
ABSL_FLAG(double, density, kDefaults.density,
          "share of a sparse layer each rank sends");
ABSL_FLAG(double, shared_fraction, kDefaults.shared_fraction,
          "share of a rank's entries at coordinates all ranks of the job pick");
ABSL_FLAG(uint64_t, dense_below, kDefaults.dense_below,
          "layers with fewer elements are sent dense");
ABSL_FLAG(int32_t, payload_variants, kDefaults.payload_variants,
          "distinct payloads per (job, rank, layer), replayed in turn");
ABSL_FLAG(uint64_t, seed, kDefaults.seed, "seed of the payloads");
ABSL_FLAG(absl::Duration, sample_interval, kDefaults.sample_interval,
          "how often RSS and /metrics are sampled");
ABSL_FLAG(absl::Duration, merge_timeout, kDefaults.merge_timeout,
          "longest wait for one merged layer");
ABSL_FLAG(absl::Duration, run_timeout, kDefaults.run_timeout,
          "the run fails when its steps take longer");
ABSL_FLAG(absl::Duration, round_timeout, kDefaults.round_timeout,
          "the shards' --round_timeout");
ABSL_FLAG(std::string, aggregator, ENTROGRAD_LOAD_AGGREGATOR_PATH,
          "the entrograd-aggregator binary (default: the one in this build)");
ABSL_FLAG(std::string, out, kDefaults.out_dir,
          "directory for load_report.json and the shards' logs");

namespace entrograd::bench {

absl::StatusOr<LoadOptions> LoadOptionsFromFlags(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "entrograd-aggregator-load: starts S entrograd-aggregator processes on "
      "127.0.0.1 and drives jobs x ranks real clients through them; reports "
      "rounds/s and bytes/s per shard, round latency p50/p99, peak RSS over "
      "time and errors (exit 1 on any error).\n"
      "Usage: entrograd-aggregator-load [--shards=3 --jobs=8 --ranks=16 "
      "--layers=100 --steps=200] [--out=DIR]");
  absl::ParseCommandLine(argc, argv);
  LoadOptions options;
  options.shards = absl::GetFlag(FLAGS_shards);
  options.jobs = absl::GetFlag(FLAGS_jobs);
  options.ranks = absl::GetFlag(FLAGS_ranks);
  options.layers = absl::GetFlag(FLAGS_layers);
  options.steps = absl::GetFlag(FLAGS_steps);
  options.density = absl::GetFlag(FLAGS_density);
  options.shared_fraction = absl::GetFlag(FLAGS_shared_fraction);
  options.dense_below = absl::GetFlag(FLAGS_dense_below);
  options.payload_variants = absl::GetFlag(FLAGS_payload_variants);
  options.seed = absl::GetFlag(FLAGS_seed);
  options.sample_interval = absl::GetFlag(FLAGS_sample_interval);
  options.merge_timeout = absl::GetFlag(FLAGS_merge_timeout);
  options.run_timeout = absl::GetFlag(FLAGS_run_timeout);
  options.round_timeout = absl::GetFlag(FLAGS_round_timeout);
  options.aggregator_path = absl::GetFlag(FLAGS_aggregator);
  options.out_dir = absl::GetFlag(FLAGS_out);
  if (absl::Status status = ValidateLoadOptions(options); !status.ok()) {
    return status;
  }
  return options;
}

}  // namespace entrograd::bench
