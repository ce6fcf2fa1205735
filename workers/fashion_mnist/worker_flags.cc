#include "workers/fashion_mnist/worker_flags.h"

#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

ABSL_FLAG(std::string, shards, "127.0.0.1:50051",
          "aggregator shard addresses host:port, comma-separated, same order "
          "on every rank");
ABSL_FLAG(std::string, job_id, "fashion-mnist", "job id shared by the ranks");
ABSL_FLAG(uint32_t, world_size, 1, "number of ranks");
ABSL_FLAG(uint32_t, rank, 0, "this worker's rank, 0 <= rank < world_size");
ABSL_FLAG(std::string, token_file, "", "file holding this job's bearer token");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM CA that signed the shards' certificates; enables TLS");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM client certificate chain for mTLS (needs --tls_ca, --tls_key)");
ABSL_FLAG(std::string, tls_key, "", "PEM private key for --tls_cert");
ABSL_FLAG(std::string, policy, "entropy",
          "entropy, entropy_budget, topk, threshold or dense");
ABSL_FLAG(double, rho, 0.01,
          "density of a maximal-entropy layer (topk: fixed density; "
          "entropy_budget: global density)");
ABSL_FLAG(int64_t, intervals, 256, "entropy intervals M");
ABSL_FLAG(int64_t, dense_below, 1000,
          "layers with fewer elements are sent dense");
ABSL_FLAG(int64_t, warmup_steps, 0, "DGC warm-up steps");
ABSL_FLAG(int64_t, epochs, 1, "epochs");
ABSL_FLAG(int64_t, max_steps, 0, "stop after this many steps (0: no limit)");
ABSL_FLAG(int64_t, batch_size, 64, "batch size per rank");
ABSL_FLAG(double, lr, 0.1, "learning rate");
ABSL_FLAG(double, momentum, 0.9, "SGD momentum");
ABSL_FLAG(uint64_t, seed, 1, "seed of the initial model and the data order");
ABSL_FLAG(std::string, model, "cnn",
          "cnn (454,922 parameters), wide (the same trunk with an "
          "8192-wide head, 25,832,330 parameters: communication-bound) or "
          "vgg (9 3x3 convolutions, 777,930 parameters, 10 compressed "
          "layers)");
ABSL_FLAG(int64_t, eval_every, 0,
          "rank 0 evaluates every N steps (0: at each epoch's end only)");
ABSL_FLAG(int64_t, eval_samples, 0,
          "evaluate on the first N test images (0: all 10,000)");
ABSL_FLAG(std::string, data_dir, "/usr/share/datasets/fashion-mnist",
          "Fashion-MNIST IDX files (Debian's dataset-fashion-mnist)");
ABSL_FLAG(std::string, out, "out/worker", "output directory (checkpoints)");
ABSL_FLAG(int64_t, checkpoint_interval, 0,
          "checkpoint every N steps (0: never)");
ABSL_FLAG(bool, resume, true,
          "continue from the checkpoint in --out when there is one");
ABSL_FLAG(absl::Duration, merge_timeout, absl::Seconds(120),
          "longest wait for one merged layer");
ABSL_FLAG(int64_t, validation, 0,
          "hold out the last N training images as a validation set, "
          "evaluated with the test set (0: none); choose hyper-parameters "
          "on it, never on the test set");
ABSL_FLAG(std::string, value_type, "f32",
          "value type of what this worker sends: f32, f16 or bf16 (every "
          "type is accepted)");
ABSL_FLAG(int64_t, partition_bytes, int64_t{4} << 20,
          "layers larger than this many float32 bytes travel as parts of at "
          "most this size, spread over the shards (0: never cut)");
ABSL_FLAG(int32_t, threads, 1, "LibTorch intra-op threads");
ABSL_FLAG(std::string, metrics_listen, "",
          "serve client metrics on host:port /metrics (empty: off)");
ABSL_FLAG(bool, per_layer_metrics, false,
          "export each layer's entropy and keep ratio (one series per layer)");

namespace entrograd::workers {

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
  absl::StatusOr<KeepPolicy> policy =
      ParseKeepPolicy(absl::GetFlag(FLAGS_policy));
  if (!policy.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--policy: ", policy.status().message()));
  }
  config.policy = *policy;
  config.rho = absl::GetFlag(FLAGS_rho);
  config.intervals = absl::GetFlag(FLAGS_intervals);
  config.dense_below = absl::GetFlag(FLAGS_dense_below);
  config.warmup_steps = absl::GetFlag(FLAGS_warmup_steps);
  config.epochs = absl::GetFlag(FLAGS_epochs);
  config.max_steps = absl::GetFlag(FLAGS_max_steps);
  config.batch_size = absl::GetFlag(FLAGS_batch_size);
  config.learning_rate = absl::GetFlag(FLAGS_lr);
  config.momentum = absl::GetFlag(FLAGS_momentum);
  config.seed = absl::GetFlag(FLAGS_seed);
  absl::StatusOr<ModelKind> model = ParseModelKind(absl::GetFlag(FLAGS_model));
  if (!model.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--model: ", model.status().message()));
  }
  config.model = *model;
  config.eval_every = absl::GetFlag(FLAGS_eval_every);
  config.eval_samples = absl::GetFlag(FLAGS_eval_samples);
  config.data_dir = absl::GetFlag(FLAGS_data_dir);
  config.out_dir = absl::GetFlag(FLAGS_out);
  config.checkpoint_interval = absl::GetFlag(FLAGS_checkpoint_interval);
  config.resume = absl::GetFlag(FLAGS_resume);
  config.merge_timeout = absl::GetFlag(FLAGS_merge_timeout);
  config.partition_bytes = absl::GetFlag(FLAGS_partition_bytes);
  config.validation = absl::GetFlag(FLAGS_validation);
  absl::StatusOr<ValueType> value_type =
      ParseValueType(absl::GetFlag(FLAGS_value_type));
  if (!value_type.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--value_type: ", value_type.status().message()));
  }
  config.value_type = *value_type;
  config.threads = absl::GetFlag(FLAGS_threads);
  config.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  config.per_layer_metrics = absl::GetFlag(FLAGS_per_layer_metrics);
  if (absl::Status status = ValidateWorkerConfig(config); !status.ok()) {
    return status;
  }
  return config;
}

}  // namespace entrograd::workers
