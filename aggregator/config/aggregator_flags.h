// Command-line flags of entrograd-aggregator (absl flags), turned into a
// validated AggregatorConfig.
#ifndef ENTROGRAD_AGGREGATOR_CONFIG_AGGREGATOR_FLAGS_H_
#define ENTROGRAD_AGGREGATOR_CONFIG_AGGREGATOR_FLAGS_H_

#include "absl/status/statusor.h"
#include "aggregator/config/aggregator_config.h"

namespace entrograd::aggregator {

// Parses argv (exits with usage on --help or an unknown flag, as absl flags
// do) and validates. Errors: INVALID_ARGUMENT naming the flag.
absl::StatusOr<AggregatorConfig> ConfigFromFlags(int argc, char** argv);

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_CONFIG_AGGREGATOR_FLAGS_H_
