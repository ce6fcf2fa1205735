#include "workers/fashion_mnist/worker_config.h"

#include "absl/strings/str_cat.h"

namespace entrograd::workers {

namespace {
absl::Status Bad(absl::string_view flag, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why));
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
  if (config.eval_every < 0) return Bad("eval_every", "expected >= 0");
  if (config.eval_samples < 0) return Bad("eval_samples", "expected >= 0");
  if (config.checkpoint_interval < 0) {
    return Bad("checkpoint_interval", "expected >= 0");
  }
  if (config.out_dir.empty()) return Bad("out", "expected a directory");
  if (config.threads < 1) return Bad("threads", "expected >= 1");
  return absl::OkStatus();
}

}  // namespace entrograd::workers
