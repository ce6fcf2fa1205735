// The result of a run: one flat record (summary.json), the same as a
// Markdown table (summary.md), and WriteRunResults, which also draws
// plot.svg. Totals are summed over ranks.
#ifndef ENTROGRAD_WORKERS_LAUNCHER_RUN_SUMMARY_H_
#define ENTROGRAD_WORKERS_LAUNCHER_RUN_SUMMARY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "workers/launcher/launch_options.h"
#include "workers/launcher/run_record.h"
#include "workers/launcher/worker_events.h"

namespace entrograd::launcher {

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

// Median and p90 of each phase over `times` (zeros when empty).
StepBreakdown SummarizeStepTimes(const std::vector<StepTimes>& times);

struct RunSummary {
  // As launched.
  std::string job_id;
  std::string policy;
  int workers = 0;
  int shards = 1;  // aggregator processes
  double rho = 0;
  int epochs = 0;  // requested
  int64_t max_steps = 0;
  int batch_size = 0;
  double lr = 0;
  double momentum = 0;
  int64_t seed = 0;
  std::string model;
  int64_t eval_every = 0;
  int64_t validation = 0;  // held-out training images
  int64_t warmup_steps = 0;
  std::string value_type;
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
  // Rank 0's training loop without its evaluations (time-to-accuracy's
  // clock), when it said.
  std::optional<double> train_seconds;
  StepBreakdown breakdown;
  std::vector<EvalEvent> evals;     // rank 0's periodic evaluations
  std::optional<LinkTraffic> link;  // only under --link
  // Every rank sent done with the same non-empty params_hash: data-parallel
  // replicas must end bitwise equal.
  bool replicas_identical = false;
  std::string params_hash;  // rank 0's
};

// Summarises `record` for a run of `options` (job `job_id`) that took
// `wall_seconds`. Works on a partial record too (missing values stay empty).
RunSummary SummarizeRun(const LaunchOptions& options, const std::string& job_id,
                        const RunRecord& record, double wall_seconds);

// summary.json: a flat object; absent optional values are null.
std::string SummaryJson(const RunSummary& summary);

// summary.md: a short header line and a two-column Markdown table.
std::string SummaryMarkdown(const RunSummary& summary);

// Writes summary.json, summary.md and plot.svg into `dir` (which exists).
// INTERNAL naming the file when one cannot be written.
absl::Status WriteRunResults(const std::string& dir, const RunSummary& summary,
                             const RunRecord& record);

}  // namespace entrograd::launcher

#endif  // ENTROGRAD_WORKERS_LAUNCHER_RUN_SUMMARY_H_
