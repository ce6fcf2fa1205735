#include "workers/launcher/launch_flags.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace {
// Defaults come from LaunchOptions so the two cannot drift apart. Never
// destroyed: no static destructor runs at exit.
const entrograd::launcher::LaunchOptions& Defaults() {
  static const auto* const kDefaults = new entrograd::launcher::LaunchOptions();
  return *kDefaults;
}
}  // namespace

ABSL_FLAG(int32_t, workers, Defaults().workers,
          "worker processes (world size)");
ABSL_FLAG(int32_t, shards, Defaults().shards,
          "aggregator processes; layers (and parts of large layers) spread "
          "over them");
ABSL_FLAG(
    std::string, policy, Defaults().policy,
    "compression policy: entropy, entropy_budget, topk, threshold or dense");
ABSL_FLAG(double, rho, Defaults().rho,
          "density kept (0 < rho <= 1) under entropy, entropy_budget and topk");
ABSL_FLAG(double, threshold, Defaults().threshold,
          "magnitude threshold (>= 0) under --policy=threshold: entries at "
          "least this large are sent");
ABSL_FLAG(int32_t, epochs, Defaults().epochs, "passes over the training set");
ABSL_FLAG(int64_t, max_steps, Defaults().max_steps,
          "stop after this many steps (0: no limit)");
ABSL_FLAG(int32_t, batch_size, Defaults().batch_size, "per-worker mini-batch");
ABSL_FLAG(double, lr, Defaults().lr,
          "SGD learning rate (the base rate of --lr_schedule)");
ABSL_FLAG(std::string, lr_schedule, Defaults().lr_schedule,
          "constant, or cosine: --lr at the first step, annealed as a half "
          "cosine towards 0 at the last");
ABSL_FLAG(double, momentum, Defaults().momentum, "SGD momentum");
ABSL_FLAG(int64_t, seed, Defaults().seed,
          "seed of initialisation and data order");
ABSL_FLAG(std::string, model, Defaults().model,
          "model: cnn (0.45M parameters), wide (25.8M, communication-bound) or "
          "vgg (0.78M, 10 compressed layers)");
ABSL_FLAG(int64_t, eval_every, Defaults().eval_every,
          "rank 0 evaluates every N steps, for time-to-accuracy (0: at each "
          "epoch's end)");
ABSL_FLAG(bool, eval_each_epoch, Defaults().eval_each_epoch,
          "rank 0 evaluates at the end of every epoch (false: only after "
          "the last step, and every --eval_every steps)");
ABSL_FLAG(int64_t, eval_samples, Defaults().eval_samples,
          "evaluate on the first N test images (0: all 10,000)");
ABSL_FLAG(int64_t, validation, Defaults().validation,
          "hold out the last N training images as a validation set, "
          "evaluated with the test set (0: none)");
ABSL_FLAG(int64_t, warmup_steps, Defaults().warmup_steps,
          "DGC warm-up steps of the compressed policies");
ABSL_FLAG(int64_t, dense_below, Defaults().dense_below,
          "layers with fewer elements are sent whole every step (0: every "
          "layer compressed)");
ABSL_FLAG(double, merged_keep_factor, Defaults().merged_keep_factor,
          "global top-k: 0 takes the union of the ranks' entries back; c in "
          "[1, 1e6] keeps only the ceil(c * largest k) merged entries of "
          "largest magnitude per layer, the ranks keep the rest");
ABSL_FLAG(std::string, value_type, Defaults().value_type,
          "value type the workers send: f32, f16, bf16 or e5m2 (one byte; "
          "each rank keeps the rounding error in its residual)");
ABSL_FLAG(std::string, link, Defaults().link,
          "emulate a network: every process in its own network namespace, "
          "links limited to this rate both ways (100mbit, 1gbit, 10gbit, "
          "unlimited; needs root). Empty: loopback");
ABSL_FLAG(absl::Duration, timeout, Defaults().timeout,
          "stop the run and fail after this long (0: no limit)");
ABSL_FLAG(std::string, out, Defaults().out_dir,
          "results directory (summary.json, summary.md, plot.svg, logs)");
ABSL_FLAG(std::string, aggregator_bin, Defaults().aggregator_bin,
          "entrograd-aggregator binary (default: the one of this build)");
ABSL_FLAG(std::string, worker_bin, Defaults().worker_bin,
          "entrograd-worker binary (default: the one of this build)");
ABSL_FLAG(absl::Duration, round_timeout, Defaults().round_timeout,
          "aggregator: abort a round not complete this long after it started");
ABSL_FLAG(int64_t, checkpoint_interval, Defaults().checkpoint_interval,
          "workers: checkpoint every this many steps (0: never)");
ABSL_FLAG(std::string, data_dir, Defaults().data_dir,
          "Fashion-MNIST IDX files (gzipped)");
ABSL_FLAG(std::string, extra_worker_args, Defaults().extra_worker_args,
          "more worker flags, whitespace-separated, appended to each worker");
ABSL_FLAG(std::string, job_id, Defaults().job_id,
          "job id (default: generated per run)");
ABSL_FLAG(absl::Duration, aggregator_start_timeout,
          Defaults().aggregator_start_timeout,
          "how long the aggregator may take to report its port");

namespace entrograd::launcher {

absl::StatusOr<LaunchOptions> LaunchOptionsFromFlags(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "entrograd-launch: trains on one machine with S aggregator shards and W "
      "worker processes, shows progress, writes summary.json, summary.md and "
      "plot.svg.\n"
      "Usage: entrograd-launch [--workers=4] [--policy=entropy] [--rho=0.01] "
      "[--epochs=1] [--out=out/run] [flags]");
  const std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() > 1) {
    std::vector<std::string> rest(positional.begin() + 1, positional.end());
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected arguments: ", absl::StrJoin(rest, " "),
                     " (flags are --name=value)"));
  }
  LaunchOptions options;
  options.workers = absl::GetFlag(FLAGS_workers);
  options.shards = absl::GetFlag(FLAGS_shards);
  options.policy = absl::GetFlag(FLAGS_policy);
  options.rho = absl::GetFlag(FLAGS_rho);
  options.threshold = absl::GetFlag(FLAGS_threshold);
  options.epochs = absl::GetFlag(FLAGS_epochs);
  options.max_steps = absl::GetFlag(FLAGS_max_steps);
  options.batch_size = absl::GetFlag(FLAGS_batch_size);
  options.lr = absl::GetFlag(FLAGS_lr);
  options.lr_schedule = absl::GetFlag(FLAGS_lr_schedule);
  options.momentum = absl::GetFlag(FLAGS_momentum);
  options.seed = absl::GetFlag(FLAGS_seed);
  options.model = absl::GetFlag(FLAGS_model);
  options.eval_every = absl::GetFlag(FLAGS_eval_every);
  options.eval_each_epoch = absl::GetFlag(FLAGS_eval_each_epoch);
  options.eval_samples = absl::GetFlag(FLAGS_eval_samples);
  options.validation = absl::GetFlag(FLAGS_validation);
  options.warmup_steps = absl::GetFlag(FLAGS_warmup_steps);
  options.dense_below = absl::GetFlag(FLAGS_dense_below);
  options.merged_keep_factor = absl::GetFlag(FLAGS_merged_keep_factor);
  options.value_type = absl::GetFlag(FLAGS_value_type);
  options.link = absl::GetFlag(FLAGS_link);
  options.timeout = absl::GetFlag(FLAGS_timeout);
  options.out_dir = absl::GetFlag(FLAGS_out);
  options.aggregator_bin = absl::GetFlag(FLAGS_aggregator_bin);
  options.worker_bin = absl::GetFlag(FLAGS_worker_bin);
  options.round_timeout = absl::GetFlag(FLAGS_round_timeout);
  options.checkpoint_interval = absl::GetFlag(FLAGS_checkpoint_interval);
  options.data_dir = absl::GetFlag(FLAGS_data_dir);
  options.extra_worker_args = absl::GetFlag(FLAGS_extra_worker_args);
  options.job_id = absl::GetFlag(FLAGS_job_id);
  options.aggregator_start_timeout =
      absl::GetFlag(FLAGS_aggregator_start_timeout);
  if (absl::Status status = ValidateLaunchOptions(options); !status.ok()) {
    return status;
  }
  if (absl::Status status = ResolveBinaries(options); !status.ok()) {
    return status;
  }
  return options;
}

}  // namespace entrograd::launcher
