#include "bench/aggregator_load/load_options.h"

#include "absl/strings/str_cat.h"

namespace entrograd::bench {

absl::Status ValidateLoadOptions(const LoadOptions& options) {
  if (options.shards < 1 || options.shards > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("--shards must be 1 to 64, not ", options.shards));
  }
  if (options.jobs < 1 || options.jobs > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("--jobs must be 1 to 64 (the shard's --max_jobs), not ",
                     options.jobs));
  }
  if (options.ranks < 1 || options.ranks > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("--ranks must be 1 to 1024, not ", options.ranks));
  }
  if (options.layers < 1 || options.layers > 10000) {
    return absl::InvalidArgumentError(
        absl::StrCat("--layers must be 1 to 10000, not ", options.layers));
  }
  if (options.steps < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--steps must be positive, not ", options.steps));
  }
  if (!(options.density > 0.0 && options.density <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--density must be in (0, 1], not ", options.density));
  }
  if (!(options.shared_fraction >= 0.0 && options.shared_fraction <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--shared_fraction must be in [0, 1], not ", options.shared_fraction));
  }
  if (options.payload_variants < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--payload_variants must be positive, not ",
                     options.payload_variants));
  }
  if (options.sample_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--sample_interval must be positive");
  }
  if (options.aggregator_path.empty()) {
    return absl::InvalidArgumentError("--aggregator is required");
  }
  return absl::OkStatus();
}

}  // namespace entrograd::bench
