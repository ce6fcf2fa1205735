// Command-line flags of entrograd-aggregator-load -> LoadOptions, defaults
// taken from LoadOptions so they cannot drift.
#ifndef ENTROGRAD_BENCH_AGGREGATOR_LOAD_LOAD_FLAGS_H_
#define ENTROGRAD_BENCH_AGGREGATOR_LOAD_LOAD_FLAGS_H_

#include "absl/status/statusor.h"
#include "bench/aggregator_load/load_options.h"

namespace entrograd::bench {

// Parses argv; INVALID_ARGUMENT for out-of-range values.
absl::StatusOr<LoadOptions> LoadOptionsFromFlags(int argc, char** argv);

}  // namespace entrograd::bench

#endif  // ENTROGRAD_BENCH_AGGREGATOR_LOAD_LOAD_FLAGS_H_
