// What one local training run is: how many workers, which compression
// policy, the training hyper-parameters passed through to every worker, and
// where the binaries and results are. Filled from flags by launch_flags.h.
#ifndef ENTROGRAD_WORKERS_LAUNCHER_LAUNCH_OPTIONS_H_
#define ENTROGRAD_WORKERS_LAUNCHER_LAUNCH_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "entrograd/compression_options.h"

namespace entrograd::launcher {

// The compression policies a worker accepts for --policy (ALGORITHM.md 5.4).
const std::vector<std::string>& KnownPolicies();
// The models a worker trains for --model.
const std::vector<std::string>& KnownModels();

struct LaunchOptions {
  // Worker processes (the world size). 1..256: one machine.
  int workers = 4;
  // Aggregator processes (shards), 1..64. Every worker streams to all of
  // them; layers, and the parts of large layers (the workers'
  // --partition_bytes), spread over them by the shard map. Under --link each
  // shard has its own namespace and link, as on a cluster.
  int shards = 1;
  // The compression defaults are the library's (CompressionOptions), as the
  // worker's are.
  // Compression policy, one of KnownPolicies().
  std::string policy = std::string(KeepPolicyName(CompressionOptions{}.policy));
  // Density (fraction of entries kept, 0 < rho <= 1) of "entropy", "topk"
  // and "entropy_budget".
  double rho = CompressionOptions{}.rho;
  // Magnitude threshold (finite, >= 0) of "threshold": every gradient entry
  // at least this large is sent.
  double threshold = CompressionOptions{}.threshold;
  // Passes over the training set; >= 1.
  int epochs = 1;
  // Stop after this many steps in total (0: no limit); for short runs.
  int64_t max_steps = 0;
  // Per-worker mini-batch; >= 1.
  int batch_size = 64;
  // SGD learning rate (> 0) and momentum (0 <= momentum < 1).
  double lr = 0.1;
  // "constant", or "cosine": lr at the first step, annealed as a half cosine
  // towards 0 at the last (workers/run_format/lr_schedule.h).
  std::string lr_schedule = "constant";
  double momentum = 0.9;
  // Seed of the model initialisation and data order; every rank gets it.
  int64_t seed = 1;
  // The model every worker trains: "cnn" (0.45M parameters), "wide"
  // (25.8M parameters, communication-bound) or "vgg" (0.78M parameters, 10
  // compressed layers).
  std::string model = "cnn";
  // Rank 0 evaluates every this many steps (0: at each epoch's end), for
  // time-to-accuracy.
  int64_t eval_every = 0;
  // Whether rank 0 also evaluates at each epoch's end; false: only after the
  // last step (and every eval_every steps), which spares multi-epoch studies
  // the evaluations every rank waits for.
  bool eval_each_epoch = true;
  // Evaluations use the first this many test images (0: all 10,000).
  int64_t eval_samples = 0;
  // The last this many training images are held out as a validation set,
  // evaluated with the test set (0: none). Choose hyper-parameters on it.
  int64_t validation = 0;
  // DGC warm-up steps of the compressed policies (ALGORITHM.md 5.4).
  int64_t warmup_steps = CompressionOptions{}.warmup_steps;
  // Layers with fewer elements are sent whole every step (ALGORITHM.md
  // 5.4); 0 compresses every layer. >= 0.
  int64_t dense_below = CompressionOptions{}.dense_below;
  // Global top-k (ALGORITHM.md 6, variant): 0 takes the union of the ranks'
  // entries back; c in [1, 1e6] keeps only the ceil(c * largest k) merged
  // entries of largest magnitude, and each rank keeps what was left out.
  double merged_keep_factor = 0.0;
  // What the workers send: "f32", "f16", "bf16" or "e5m2" (every type is
  // accepted).
  std::string value_type = "f32";
  // Link emulation: empty runs everything on loopback. Otherwise a rate
  // ("100mbit", "1gbit", "10gbit", "unlimited"): the aggregator and every
  // worker run in their own network namespace, joined by veth pairs to one
  // bridge, with tc tbf limiting each host link to the rate in both
  // directions. Needs root and iproute2; see workers/link_emulation.
  std::string link;
  // The whole run is stopped (and fails) after this long; 0: no limit.
  absl::Duration timeout = absl::ZeroDuration();
  // Results directory: summary.json, summary.md, plot.svg, one log per
  // process and one rank<r>/ directory per worker. Created when missing.
  std::string out_dir = "out/run";
  // The binaries started. Empty: DefaultAggregatorBinary() /
  // DefaultWorkerBinary().
  std::string aggregator_bin;
  std::string worker_bin;
  // Passed to the aggregator: a round not complete this long after its
  // first contribution is aborted for every rank. The workers wait for a
  // merged layer a minute longer (WorkerMergeTimeout), so that the
  // aggregator's abort, which names the missing ranks, comes first. Longer
  // than the aggregator's own 60 s: rank 0 evaluates at every epoch's end
  // while the other ranks' next rounds wait for it, and on a machine shared
  // by several runs one evaluation took over a minute (5 of 6 six-epoch runs
  // aborted at 60 s, docs/BENCHMARKS.md "Six epochs at 1000x"). A rank that
  // dies is seen at once by the launcher, whatever this is.
  absl::Duration round_timeout = absl::Minutes(5);
  // Passed to workers: checkpoint every this many steps (0: never).
  int64_t checkpoint_interval = 0;
  // Fashion-MNIST IDX files (gzipped), passed to workers.
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  // Appended to every worker's command line, split on whitespace.
  std::string extra_worker_args;
  // Job id every worker joins with. Empty: one is generated per run.
  std::string job_id;
  // How long the aggregator may take to print its port line.
  absl::Duration aggregator_start_timeout = absl::Seconds(30);
  // After SIGTERM, how long children get before SIGKILL.
  absl::Duration kill_grace = absl::Seconds(5);
};

// Checks every field; the message names the flag ("--workers must be ...").
// INVALID_ARGUMENT on the first bad field. Binary paths are not checked
// here (see ResolveBinaries).
absl::Status ValidateLaunchOptions(const LaunchOptions& options);

// Fills empty aggregator_bin / worker_bin with the defaults and checks that
// both are executable files. NOT_FOUND naming the flag and the path tried.
absl::Status ResolveBinaries(LaunchOptions& options);

// The aggregator / worker binary of the build (or install) tree this
// launcher runs from: in the build tree the targets' output paths relative
// to the launcher's; otherwise a file of that name beside the launcher.
// Falls back to the bare name when neither exists (so the error names it).
std::string DefaultAggregatorBinary();
std::string DefaultWorkerBinary();

}  // namespace entrograd::launcher

#endif  // ENTROGRAD_WORKERS_LAUNCHER_LAUNCH_OPTIONS_H_
