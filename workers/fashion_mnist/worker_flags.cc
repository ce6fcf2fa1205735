#include "workers/fashion_mnist/worker_flags.h"

#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace {
// Defaults come from WorkerConfig (and through it from the library's
// options structs) so that the flags and the library cannot drift apart.
// Never destroyed: no static destructor runs at exit.
const entrograd::workers::WorkerConfig& Defaults() {
  static const auto* const kDefaults = new entrograd::workers::WorkerConfig();
  return *kDefaults;
}
}  // namespace

ABSL_FLAG(std::string, shards, absl::StrJoin(Defaults().shards, ","),
          "aggregator shard addresses host:port, comma-separated, same order "
          "on every rank");
ABSL_FLAG(std::string, job_id, Defaults().job_id, "job id shared by the ranks");
ABSL_FLAG(uint32_t, world_size, Defaults().world_size, "number of ranks");
ABSL_FLAG(uint32_t, rank, Defaults().rank,
          "this worker's rank, 0 <= rank < world_size");
ABSL_FLAG(std::string, token_file, "",
          "file holding this job's bearer token (default: no token)");
ABSL_FLAG(std::string, tls_ca, Defaults().tls_ca_file,
          "PEM CA that signed the shards' certificates; enables TLS");
ABSL_FLAG(std::string, tls_cert, Defaults().tls_cert_file,
          "PEM client certificate chain for mTLS (needs --tls_ca, --tls_key)");
ABSL_FLAG(std::string, tls_key, Defaults().tls_key_file,
          "PEM private key for --tls_cert");
ABSL_FLAG(std::string, policy,
          std::string(entrograd::KeepPolicyName(Defaults().policy)),
          "entropy, entropy_budget, topk, threshold or dense");
ABSL_FLAG(double, rho, Defaults().rho,
          "density of a maximal-entropy layer, in (0, 1] (topk: fixed "
          "density; entropy_budget: global density)");
ABSL_FLAG(double, threshold, Defaults().threshold,
          "magnitude threshold (>= 0) of --policy=threshold: entries at "
          "least this large are sent");
ABSL_FLAG(double, min_keep_ratio, Defaults().min_keep_ratio,
          "r_min of --policy=entropy: no layer keeps a smaller share than "
          "this, whatever its entropy (0: no floor)");
ABSL_FLAG(std::string, entropy_of,
          std::string(entrograd::EntropySourceName(Defaults().entropy_of)),
          "what the entropy policies measure: gradient (the fresh gradient, "
          "the default) or accumulated (residual plus gradient)");
ABSL_FLAG(int64_t, share_hold_steps, Defaults().share_hold_steps,
          "--policy=entropy: take each layer's share at the first step of "
          "every window of this many steps and hold it for the window "
          "(1: every step)");
ABSL_FLAG(double, merged_keep_factor, Defaults().merged_keep_factor,
          "global top-k: 0 takes the union of the ranks' entries back; c in "
          "[1, 1e6] takes only the ceil(c * largest k) merged entries of "
          "largest magnitude per compressed layer, and keeps the rest of "
          "this rank's entries in its residual");
ABSL_FLAG(bool, accumulate_in_update_space,
          Defaults().accumulate_in_update_space,
          "keep the residual and velocity in update units: when the "
          "learning rate changes from a to b they are scaled by a / b, so "
          "every gradient is applied at the rate of its own step (needs "
          "--momentum > 0)");
ABSL_FLAG(int64_t, intervals, Defaults().intervals, "entropy intervals M");
ABSL_FLAG(int64_t, dense_below, Defaults().dense_below,
          "layers with fewer elements are sent dense");
ABSL_FLAG(int64_t, warmup_steps, Defaults().warmup_steps, "DGC warm-up steps");
ABSL_FLAG(int64_t, epochs, Defaults().epochs, "epochs");
ABSL_FLAG(int64_t, max_steps, Defaults().max_steps,
          "stop after this many steps (0: no limit)");
ABSL_FLAG(int64_t, batch_size, Defaults().batch_size, "batch size per rank");
ABSL_FLAG(double, lr, Defaults().learning_rate,
          "learning rate (the base rate of --lr_schedule)");
ABSL_FLAG(std::string, lr_schedule,
          std::string(entrograd::LrScheduleName(Defaults().lr_schedule)),
          "constant, or cosine: --lr at the first step, annealed as a half "
          "cosine towards 0 at the last");
ABSL_FLAG(double, momentum, Defaults().momentum, "SGD momentum");
ABSL_FLAG(uint64_t, seed, Defaults().seed,
          "seed of the initial model and the data order");
ABSL_FLAG(std::string, model,
          std::string(entrograd::workers::ModelKindName(Defaults().model)),
          "cnn (454,922 parameters), wide (the same trunk with an "
          "8192-wide head, 25,832,330 parameters: communication-bound) or "
          "vgg (9 3x3 convolutions, 777,930 parameters, 10 compressed "
          "layers)");
ABSL_FLAG(int64_t, eval_every, Defaults().eval_every,
          "rank 0 evaluates every N steps (0: at each epoch's end only)");
ABSL_FLAG(bool, eval_each_epoch, Defaults().eval_each_epoch,
          "rank 0 evaluates at the end of every epoch (false: only after "
          "the last step, and every --eval_every steps)");
ABSL_FLAG(int64_t, eval_samples, Defaults().eval_samples,
          "evaluate on the first N test images (0: all 10,000)");
ABSL_FLAG(std::string, data_dir, Defaults().data_dir,
          "Fashion-MNIST IDX files (Debian's dataset-fashion-mnist)");
ABSL_FLAG(std::string, out, Defaults().out_dir,
          "output directory (checkpoints)");
ABSL_FLAG(int64_t, checkpoint_interval, Defaults().checkpoint_interval,
          "checkpoint every N steps (0: never)");
ABSL_FLAG(bool, resume, Defaults().resume,
          "continue from the checkpoint in --out when there is one");
ABSL_FLAG(absl::Duration, merge_timeout, Defaults().merge_timeout,
          "longest wait for one merged layer");
ABSL_FLAG(int64_t, validation, Defaults().validation,
          "hold out the last N training images as a validation set, "
          "evaluated with the test set (0: none); choose hyper-parameters "
          "on it, never on the test set");
ABSL_FLAG(std::string, value_type,
          std::string(entrograd::ValueTypeName(Defaults().value_type)),
          "value type of what this worker sends: f32, f16, bf16 or e5m2 "
          "(every type is accepted)");
ABSL_FLAG(bool, gap_range_indices, Defaults().gap_range_indices,
          "let indices travel range coded (the gap_range encoding) where "
          "that is smallest, both ways; false: only the older encodings, "
          "for a shard that predates it or to measure what it saves");
ABSL_FLAG(int64_t, partition_bytes, Defaults().partition_bytes,
          "layers larger than this many float32 bytes travel as parts of at "
          "most this size, spread over the shards (0: never cut)");
ABSL_FLAG(int32_t, threads, Defaults().threads, "LibTorch intra-op threads");
ABSL_FLAG(bool, retain_freed_memory, Defaults().retain_freed_memory,
          "keep the memory a step frees (glibc blocks up to 32 MiB) for the "
          "next step instead of faulting it in again; resident memory stays "
          "at a step's peak");
ABSL_FLAG(std::string, metrics_listen, Defaults().metrics_listen,
          "serve client metrics on host:port /metrics (empty: off)");
ABSL_FLAG(bool, per_layer_metrics, Defaults().per_layer_metrics,
          "export each layer's entropy and keep ratio (one series per layer)");

namespace entrograd::workers {

namespace {

// *out = parse(value), the value of --flag; INVALID_ARGUMENT "--flag: <why>"
// otherwise.
template <typename T>
absl::Status ParseNamedFlag(absl::string_view flag, const std::string& value,
                            absl::StatusOr<T> (*parse)(absl::string_view),
                            T* out) {
  absl::StatusOr<T> parsed = parse(value);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": ", parsed.status().message()));
  }
  *out = *parsed;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<WorkerConfig> WorkerConfigFromFlags(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "entrograd-worker: one rank of the Fashion-MNIST training job on "
      "entrograd.\nUsage: entrograd-worker --shards=HOST:PORT --world_size=W "
      "--rank=R [flags]");
  absl::ParseCommandLine(argc, argv);
  WorkerConfig config;
  config.shards =
      absl::StrSplit(absl::GetFlag(FLAGS_shards), ',', absl::SkipEmpty());
  config.job_id = absl::GetFlag(FLAGS_job_id);
  config.world_size = absl::GetFlag(FLAGS_world_size);
  config.rank = absl::GetFlag(FLAGS_rank);
  const std::string token_file = absl::GetFlag(FLAGS_token_file);
  if (!token_file.empty()) {
    std::ifstream file(token_file);
    if (!(file >> config.token)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--token_file=", token_file, ": cannot read a token"));
    }
  }
  config.tls_ca_file = absl::GetFlag(FLAGS_tls_ca);
  config.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  config.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  if (absl::Status status =
          ParseNamedFlag("policy", absl::GetFlag(FLAGS_policy), ParseKeepPolicy,
                         &config.policy);
      !status.ok()) {
    return status;
  }
  config.rho = absl::GetFlag(FLAGS_rho);
  config.threshold = absl::GetFlag(FLAGS_threshold);
  config.min_keep_ratio = absl::GetFlag(FLAGS_min_keep_ratio);
  if (absl::Status status =
          ParseNamedFlag("entropy_of", absl::GetFlag(FLAGS_entropy_of),
                         ParseEntropySource, &config.entropy_of);
      !status.ok()) {
    return status;
  }
  config.share_hold_steps = absl::GetFlag(FLAGS_share_hold_steps);
  config.merged_keep_factor = absl::GetFlag(FLAGS_merged_keep_factor);
  config.accumulate_in_update_space =
      absl::GetFlag(FLAGS_accumulate_in_update_space);
  config.intervals = absl::GetFlag(FLAGS_intervals);
  config.dense_below = absl::GetFlag(FLAGS_dense_below);
  config.warmup_steps = absl::GetFlag(FLAGS_warmup_steps);
  config.epochs = absl::GetFlag(FLAGS_epochs);
  config.max_steps = absl::GetFlag(FLAGS_max_steps);
  config.batch_size = absl::GetFlag(FLAGS_batch_size);
  config.learning_rate = absl::GetFlag(FLAGS_lr);
  if (absl::Status status =
          ParseNamedFlag("lr_schedule", absl::GetFlag(FLAGS_lr_schedule),
                         ParseLrSchedule, &config.lr_schedule);
      !status.ok()) {
    return status;
  }
  config.momentum = absl::GetFlag(FLAGS_momentum);
  config.seed = absl::GetFlag(FLAGS_seed);
  if (absl::Status status = ParseNamedFlag("model", absl::GetFlag(FLAGS_model),
                                           ParseModelKind, &config.model);
      !status.ok()) {
    return status;
  }
  config.eval_every = absl::GetFlag(FLAGS_eval_every);
  config.eval_each_epoch = absl::GetFlag(FLAGS_eval_each_epoch);
  config.eval_samples = absl::GetFlag(FLAGS_eval_samples);
  config.data_dir = absl::GetFlag(FLAGS_data_dir);
  config.out_dir = absl::GetFlag(FLAGS_out);
  config.checkpoint_interval = absl::GetFlag(FLAGS_checkpoint_interval);
  config.resume = absl::GetFlag(FLAGS_resume);
  config.merge_timeout = absl::GetFlag(FLAGS_merge_timeout);
  config.partition_bytes = absl::GetFlag(FLAGS_partition_bytes);
  config.validation = absl::GetFlag(FLAGS_validation);
  if (absl::Status status =
          ParseNamedFlag("value_type", absl::GetFlag(FLAGS_value_type),
                         ParseValueType, &config.value_type);
      !status.ok()) {
    return status;
  }
  config.gap_range_indices = absl::GetFlag(FLAGS_gap_range_indices);
  config.threads = absl::GetFlag(FLAGS_threads);
  config.retain_freed_memory = absl::GetFlag(FLAGS_retain_freed_memory);
  config.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  config.per_layer_metrics = absl::GetFlag(FLAGS_per_layer_metrics);
  if (absl::Status status = ValidateWorkerConfig(config); !status.ok()) {
    return status;
  }
  return config;
}

}  // namespace entrograd::workers
