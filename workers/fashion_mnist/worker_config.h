// Configuration of one Fashion-MNIST training worker (entrograd-worker).
// The defaults are entrograd-worker's flag defaults (worker_flags.cc reads
// them from here); those that the library also has come from its options
// structs (CompressionOptions, ClientOptions), so the two cannot drift.
#ifndef ENTROGRAD_WORKERS_FASHION_MNIST_WORKER_CONFIG_H_
#define ENTROGRAD_WORKERS_FASHION_MNIST_WORKER_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "entrograd/client.h"
#include "entrograd/codec.h"
#include "entrograd/compression_options.h"
#include "workers/fashion_mnist/cnn_model.h"
#include "workers/run_format/lr_schedule.h"

namespace entrograd::workers {

struct WorkerConfig {
  // Aggregator addresses, the same order on every rank; by default one
  // aggregator on this machine.
  std::vector<std::string> shards = {"127.0.0.1:50051"};
  std::string job_id = "fashion-mnist";
  uint32_t world_size = 1;
  uint32_t rank = 0;
  std::string token;  // bearer token; empty: none
  // TLS to the shards: a PEM CA file to trust (empty: plaintext), and for
  // mTLS a PEM client certificate chain and key (both or neither; they need
  // tls_ca_file). Flags --tls_ca, --tls_cert, --tls_key, named like the
  // aggregator's. The files are read when the job connects.
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  KeepPolicy policy = CompressionOptions{}.policy;
  // Density in (0, 1]; also the budget density of entropy_budget.
  double rho = CompressionOptions{}.rho;
  // Magnitude threshold (finite, >= 0) of the threshold policy.
  double threshold = CompressionOptions{}.threshold;
  // r_min: the entropy policy's lowest keep ratio, in [0, 1].
  double min_keep_ratio = CompressionOptions{}.min_keep_ratio;
  // What the entropy policies measure (the fresh or the accumulated
  // gradient).
  EntropySource entropy_of = CompressionOptions{}.entropy_of;
  // H >= 1: the entropy policy holds each layer's share over windows of H
  // steps (1: takes it every step).
  int64_t share_hold_steps = CompressionOptions{}.share_hold_steps;
  // Global top-k: 0 takes the union of the ranks' entries back; c in
  // [1, 1e6] takes only ceil(c * largest k) merged entries per layer
  // (DistributedOptimizerOptions::merged_keep_factor).
  double merged_keep_factor = 0.0;
  // Keep the residual and velocity in update units, scaled when the rate
  // changes (DistributedOptimizerOptions::accumulate_in_update_space);
  // needs momentum > 0.
  bool accumulate_in_update_space = false;
  int64_t intervals = CompressionOptions{}.intervals;
  int64_t dense_below = CompressionOptions{}.dense_below;
  int64_t warmup_steps = CompressionOptions{}.warmup_steps;
  int64_t epochs = 1;
  int64_t max_steps = 0;    // 0: no limit
  int64_t batch_size = 64;  // per rank
  double learning_rate = 0.1;
  // How the rate changes over the run's steps (lr_schedule.h).
  LrSchedule lr_schedule = LrSchedule::kConstant;
  double momentum = 0.9;
  uint64_t seed = 1;
  ModelKind model = ModelKind::kCnn;
  // Rank 0 evaluates on the test set every this many steps (0: only at the
  // end of each epoch), for time-to-accuracy.
  int64_t eval_every = 0;
  // Whether rank 0 also evaluates at the end of every epoch. Off, it
  // evaluates only after the last step (and every eval_every steps): a study
  // of many multi-epoch runs that wants only the final accuracy saves the
  // evaluations in between, which every other rank waits for.
  bool eval_each_epoch = true;
  // Evaluations use the first this many test images (0: all 10,000). The
  // wide model needs about a minute of one core for all of them, while the
  // other ranks wait: periodic evaluation of it wants a subset.
  int64_t eval_samples = 0;
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::string out_dir = "out/worker";
  int64_t checkpoint_interval = 0;  // steps; 0: none
  bool resume = true;               // continue from out_dir's checkpoint
  absl::Duration merge_timeout = ClientOptions{}.merge_timeout;
  // Layers larger than this travel as parts spread over the shards
  // (ClientOptions::partition_bytes); 0: never cut, otherwise >= 4.
  int64_t partition_bytes = ClientOptions{}.partition_bytes;
  // The last this many training images are held out as a validation set
  // (not trained on), evaluated with the test set; 0: none.
  int64_t validation = 0;
  // What this worker sends (ClientOptions::value_type).
  ValueType value_type = ClientOptions{}.value_type;
  // Indices may travel range coded (ClientOptions::gap_range_indices).
  bool gap_range_indices = ClientOptions{}.gap_range_indices;
  int threads = 1;                 // LibTorch intra-op threads
  // glibc keeps what a step frees for the next (RetainFreedMemory).
  bool retain_freed_memory = true;
  std::string metrics_listen;      // host:port of /metrics; empty: none
  bool per_layer_metrics = false;  // per-layer entropy/keep-ratio gauges
};

// INVALID_ARGUMENT naming the flag when a value is out of range (rho must be
// in (0, 1] under every policy; threshold finite and >= 0), when only
// one of tls_cert_file and tls_key_file is given or they lack tls_ca_file,
// or when a TLS file cannot be read.
absl::Status ValidateWorkerConfig(const WorkerConfig& config);

}  // namespace entrograd::workers

#endif  // ENTROGRAD_WORKERS_FASHION_MNIST_WORKER_CONFIG_H_
