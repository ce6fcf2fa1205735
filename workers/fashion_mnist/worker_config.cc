#include "workers/fashion_mnist/worker_config.h"

#include <cmath>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "workers/fashion_mnist/fashion_mnist.h"

namespace entrograd::workers {

namespace {
absl::Status Bad(absl::string_view flag, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why));
}

// Checked here, not only when the job connects, so that a mistyped path
// fails at start rather than after the data set has loaded.
absl::Status CheckReadable(absl::string_view flag, const std::string& path) {
  if (path.empty()) return absl::OkStatus();
  std::ifstream file(path);
  if (!file) return Bad(flag, absl::StrCat(path, ": the file cannot be read"));
  return absl::OkStatus();
}

absl::Status ValidateTls(const WorkerConfig& config) {
  if (config.tls_cert_file.empty() != config.tls_key_file.empty()) {
    return Bad(config.tls_cert_file.empty() ? "tls_key" : "tls_cert",
               "--tls_cert and --tls_key must be given together");
  }
  // ClientOptions speaks TLS only with root certificates to trust: a client
  // certificate without them would silently go over plaintext.
  if (!config.tls_cert_file.empty() && config.tls_ca_file.empty()) {
    return Bad("tls_cert", "a client certificate (mTLS) needs --tls_ca too");
  }
  for (const auto& [flag, path] :
       {std::pair<absl::string_view, const std::string&>{"tls_ca",
                                                         config.tls_ca_file},
        {"tls_cert", config.tls_cert_file},
        {"tls_key", config.tls_key_file}}) {
    if (absl::Status s = CheckReadable(flag, path); !s.ok()) return s;
  }
  return absl::OkStatus();
}
}  // namespace

absl::Status ValidateWorkerConfig(const WorkerConfig& config) {
  if (config.shards.empty()) return Bad("shards", "at least one host:port");
  if (config.world_size < 1) return Bad("world_size", "expected >= 1");
  if (config.rank >= config.world_size) {
    return Bad("rank", absl::StrCat(config.rank, " is not below --world_size ",
                                    config.world_size));
  }
  if (!(config.rho > 0.0 && config.rho <= 1.0)) {
    return Bad("rho", absl::StrCat(config.rho, " is not in (0, 1]"));
  }
  if (!(std::isfinite(config.threshold) && config.threshold >= 0.0)) {
    return Bad("threshold",
               absl::StrCat(config.threshold, " is not a finite number >= 0"));
  }
  if (!(config.min_keep_ratio >= 0.0 && config.min_keep_ratio <= 1.0)) {
    return Bad("min_keep_ratio",
               absl::StrCat(config.min_keep_ratio, " is not in [0, 1]"));
  }
  if (config.share_hold_steps < 1) {
    return Bad("share_hold_steps", "expected >= 1");
  }
  if (config.share_hold_steps > 1 && config.policy != KeepPolicy::kEntropy) {
    return Bad("share_hold_steps",
               absl::StrCat(config.share_hold_steps,
                            " holds the entropy policy's share; --policy=",
                            KeepPolicyName(config.policy), " takes only 1"));
  }
  if (!IsValidMergedKeepFactor(config.merged_keep_factor)) {
    return Bad("merged_keep_factor",
               absl::StrCat(config.merged_keep_factor,
                            " is neither 0 (the whole union) nor in [1, 1e6]"));
  }
  if (config.intervals < 1) return Bad("intervals", "expected >= 1");
  if (config.dense_below < 0) return Bad("dense_below", "expected >= 0");
  if (config.warmup_steps < 0) return Bad("warmup_steps", "expected >= 0");
  if (config.epochs < 1) return Bad("epochs", "expected >= 1");
  if (config.max_steps < 0) return Bad("max_steps", "expected >= 0");
  if (config.batch_size < 1) return Bad("batch_size", "expected >= 1");
  if (!(config.learning_rate > 0.0)) return Bad("lr", "expected > 0");
  if (!(config.momentum >= 0.0 && config.momentum < 1.0)) {
    return Bad("momentum", "expected 0 <= momentum < 1");
  }
  if (config.accumulate_in_update_space && config.momentum == 0.0) {
    return Bad("accumulate_in_update_space",
               "needs --momentum > 0 (momentum correction); at momentum 0 the "
               "torch optimizer applies the merged gradient at its own rate");
  }
  if (config.eval_every < 0) return Bad("eval_every", "expected >= 0");
  if (config.eval_samples < 0) return Bad("eval_samples", "expected >= 0");
  if (config.checkpoint_interval < 0) {
    return Bad("checkpoint_interval", "expected >= 0");
  }
  if (config.out_dir.empty()) return Bad("out", "expected a directory");
  if (config.threads < 1) return Bad("threads", "expected >= 1");
  if (config.validation < 0 || config.validation >= kFashionMnistTrainSize) {
    return Bad("validation",
               absl::StrCat("expected 0 <= N < ", kFashionMnistTrainSize));
  }
  if (config.partition_bytes != 0 && config.partition_bytes < 4) {
    return Bad("partition_bytes", "expected 0 (never cut) or >= 4");
  }
  return ValidateTls(config);
}

}  // namespace entrograd::workers
