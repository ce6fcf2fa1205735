// What the aggregator load harness runs: how many shard processes, jobs,
// ranks, layers and steps, and how the payloads look. The defaults are the
// full load of docs/BENCHMARKS.md ("Load, chaos and partition"); flags
// (load_flags.h) shrink it.
#ifndef ENTROGRAD_BENCH_AGGREGATOR_LOAD_LOAD_OPTIONS_H_
#define ENTROGRAD_BENCH_AGGREGATOR_LOAD_LOAD_OPTIONS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "entrograd/compression_options.h"

namespace entrograd::bench {

struct LoadOptions {
  // entrograd-aggregator processes, each on 127.0.0.1 port 0.
  int shards = 3;
  // Jobs x ranks: one entrograd::Client (and one driving thread) per rank.
  int jobs = 8;
  int ranks = 16;
  // Layers per job, of mixed sizes (sparse_payloads.h LayerSizes).
  int layers = 100;
  // Steps every rank runs; each is one round per layer.
  int64_t steps = 200;
  // Share of a sparse layer's elements each rank sends (top-k density).
  double density = 0.01;
  // Share of those entries drawn from a set every rank of the job shares
  // (important coordinates agree across ranks, as in real training); the
  // rest are the rank's own.
  double shared_fraction = 0.5;
  // Layers with fewer elements are sent dense, as the library's
  // CompressionOptions::dense_below (the worker's --dense_below) does.
  uint64_t dense_below = CompressionOptions{}.dense_below;
  // Distinct payloads per (job, rank, layer), replayed in turn over the
  // steps: generated before the clock starts so the generator's own CPU
  // goes to gRPC, not to random numbers.
  int payload_variants = 4;
  // Seed of every payload.
  uint64_t seed = 12;
  // How often peak RSS and /metrics are sampled.
  absl::Duration sample_interval = absl::Seconds(1);
  // Bound on each WaitMerged and on the whole run (the harness fails, and
  // kills its shards, past it).
  absl::Duration merge_timeout = absl::Seconds(60);
  absl::Duration run_timeout = absl::Minutes(30);
  // The aggregator binary and its round timeout.
  std::string aggregator_path;
  absl::Duration round_timeout = absl::Seconds(60);
  // Where the JSON report and the shards' logs go.
  std::string out_dir = "out/aggregator_load";
};

// INVALID_ARGUMENT naming the first field out of range.
absl::Status ValidateLoadOptions(const LoadOptions& options);

}  // namespace entrograd::bench

#endif  // ENTROGRAD_BENCH_AGGREGATOR_LOAD_LOAD_OPTIONS_H_
