// summary.json, the result of one entrograd-launch run: RunSummary is what
// it holds, FormatRunSummaryJson writes it (the launcher) and
// ParseRunSummaryJson reads it (tests; bench/*.py read the same keys with
// Python's json module). One definition for both sides.
//
// The file is one pretty-printed object with the members in the order of
// the fields below (summed totals and derived values included: wire_bytes,
// link_bytes). Absent optional values are null; NaN and infinities are the
// strings "NaN", "Infinity" and "-Infinity" (json_double.h). Phase times are
// "<phase>_seconds_median" and "<phase>_seconds_p90" for the phases
// forward_backward, compress, wait, apply and step. "link" is the rate
// string or null; the link_* byte counts are there only under --link.
// "layer_shares" is an array of {"name", "numel", "sent_share",
// "merged_share"}, one per layer: the share sent averaged over steps and
// ranks, the share applied (the same on every rank) from rank 0.
// "evals" is an array of {"step", "seconds", "train_seconds",
// "test_accuracy", "test_loss", "validation_accuracy", "validation_loss"}.
//
// Thread safety: pure functions and value types.
#ifndef ENTROGRAD_WORKERS_RUN_FORMAT_RUN_SUMMARY_H_
#define ENTROGRAD_WORKERS_RUN_FORMAT_RUN_SUMMARY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "workers/run_format/worker_event.h"

namespace entrograd::run_format {

// Median and 90th percentile (nearest rank) of one phase's step times.
struct PhaseStats {
  double median = 0;
  double p90 = 0;
};

// Where a step's time went, over every step of every rank.
struct StepBreakdown {
  int64_t samples = 0;  // step events counted
  PhaseStats forward_backward;
  PhaseStats compress;
  PhaseStats wait;  // network plus merge
  PhaseStats apply;
  PhaseStats step;
};

// Bytes counted on the emulated links' interfaces (--link), next to the
// payload counts the workers report.
struct LinkTraffic {
  std::string rate;             // as given, e.g. "1gbit"
  int64_t workers_sent = 0;     // tx bytes of the workers' interfaces
  int64_t aggregator_sent = 0;  // tx bytes of the aggregator shards' interfaces
  int64_t total() const { return workers_sent + aggregator_sent; }
};

struct RunSummary {
  // As launched.
  std::string job_id;
  std::string policy;
  int workers = 0;
  int shards = 1;  // aggregator processes
  double rho = 0;
  double threshold = 0;  // the magnitude threshold of --policy=threshold
  int epochs = 0;        // requested
  int64_t max_steps = 0;
  int batch_size = 0;
  double lr = 0;
  std::string lr_schedule = "constant";  // "constant" when absent
  double momentum = 0;
  int64_t seed = 0;
  std::string model;
  int64_t eval_every = 0;
  int64_t validation = 0;  // held-out training images
  int64_t warmup_steps = 0;
  int64_t dense_below = 0;
  double merged_keep_factor = 0;  // 0: the union; else global top-k
  std::string value_type;
  // --extra_worker_args as given (policy variants such as --entropy_of or
  // --share_hold_steps live there); empty when none.
  std::string extra_worker_args;
  // As reported by the workers.
  int64_t epochs_completed = 0;  // evaluations rank 0 reported
  int64_t steps = 0;             // rank 0's done.steps (else steps seen)
  int64_t parameters = 0;
  int64_t layers = 0;
  std::optional<double> test_accuracy;  // rank 0's final evaluation
  std::optional<double> test_loss;
  // Rank 0's last evaluation on the validation set (--validation).
  std::optional<double> validation_accuracy;
  WireBytes bytes;               // summed over ranks
  double compression_ratio = 0;  // bytes.dense_equivalent / bytes.wire()
  double seconds = 0;            // training time: slowest rank's done.seconds
  double seconds_per_step = 0;
  double wall_seconds = 0;      // the launcher's, start-up included
  double compress_seconds = 0;  // summed over ranks
  double wait_seconds = 0;      // summed over ranks
  // Every rank sent done with the same non-empty params_hash: data-parallel
  // replicas must end bitwise equal.
  bool replicas_identical = false;
  std::string params_hash;  // rank 0's
  // Rank 0's training loop without its evaluations (time-to-accuracy's
  // clock), when it said.
  std::optional<double> train_seconds;
  StepBreakdown breakdown;
  std::optional<LinkTraffic> link;  // only under --link
  std::vector<EvalEvent> evals;     // rank 0's periodic evaluations
  // Every layer's share sent (mean over ranks) and applied (rank 0's);
  // empty when the workers did not say.
  std::vector<LayerShare> layer_shares;
};

// summary.json's text, ending in a newline.
std::string FormatRunSummaryJson(const RunSummary& summary);

// Reads summary.json's text back. Derived members (wire_bytes, link_bytes)
// are not read; unknown members are ignored. INVALID_ARGUMENT naming the
// member when the text is not JSON, or a member is missing or mistyped.
absl::StatusOr<RunSummary> ParseRunSummaryJson(absl::string_view text);

}  // namespace entrograd::run_format

#endif  // ENTROGRAD_WORKERS_RUN_FORMAT_RUN_SUMMARY_H_
