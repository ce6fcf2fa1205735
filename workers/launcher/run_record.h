// Everything the workers reported during one run, gathered from their
// events: progress (from rank 0, the lead), the series the plot draws and
// the per-rank totals the summary adds up.
//
// Thread safety: none (the launcher's single event loop owns it).
#ifndef ENTROGRAD_WORKERS_LAUNCHER_RUN_RECORD_H_
#define ENTROGRAD_WORKERS_LAUNCHER_RUN_RECORD_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "workers/run_format/worker_event.h"

namespace entrograd::launcher {

// One training step of the job.
struct StepPoint {
  int64_t step = 0;
  double mean_loss = 0;  // over the ranks that reported the step
  int ranks = 0;         // how many did
  run_format::WireBytes bytes;  // summed over those ranks (cumulative)
};

// One evaluation, as rank 0 reported it (all replicas hold the same model).
struct EpochPoint {
  int64_t epoch = 0;
  int64_t step = 0;
  std::optional<double> test_accuracy;  // absent: not evaluated then
  std::optional<double> test_loss;
  double train_loss = 0;  // mean step loss of the epoch over all ranks
  run_format::WireBytes bytes;  // job total when the evaluation arrived
};

// Where one rank's step went (seconds), from its step event.
struct StepTimes {
  double forward_backward = 0;
  double compress = 0;
  double wait = 0;
  double apply = 0;
  double step = 0;
};

class RunRecord {
 public:
  // `world_size` >= 1 ranks, numbered 0..world_size-1.
  explicit RunRecord(int world_size);

  // Records `event`, printed by worker `rank` (0 <= rank < world_size; the
  // rank the launcher started, whatever the event says).
  void Add(int rank, const run_format::WorkerEvent& event);

  int world_size() const { return static_cast<int>(ranks_.size()); }

  // From the first start event (every rank trains the same schedule); 0
  // until one arrived.
  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  int64_t total_steps() const { return total_steps_; }
  // ceil(total_steps / steps_per_epoch): the epochs the run will reach.
  int64_t planned_epochs() const;
  const std::optional<run_format::StartEvent>& start(int rank) const {
    return ranks_[rank].start;
  }

  // Rank 0's progress: steps done, the 1-based ordinal of its current epoch,
  // steps done in it, last loss. Counted from step events (not from how the
  // worker numbers them), starting at the start event's first_step when it
  // resumed from a checkpoint.
  int64_t lead_steps() const { return lead_steps_; }
  int64_t lead_epoch_ordinal() const { return lead_epoch_ordinal_; }
  int64_t lead_steps_in_epoch() const { return lead_steps_in_epoch_; }
  double lead_loss() const { return lead_loss_; }

  // Job total so far: each rank's latest cumulative bytes, summed.
  run_format::WireBytes TotalBytes() const;

  // Steps in order. Steps not yet reported by every rank are left out
  // unless `include_partial` (their byte sums would dip).
  std::vector<StepPoint> Steps(bool include_partial = false) const;
  const std::vector<EpochPoint>& epochs() const { return epochs_; }
  // Rank 0's periodic evaluations, in order.
  const std::vector<run_format::EvalEvent>& evals() const { return evals_; }
  // Every step event's times, all ranks, in arrival order.
  const std::vector<StepTimes>& step_times() const { return step_times_; }

  const std::optional<run_format::DoneEvent>& done(int rank) const {
    return ranks_[rank].done;
  }
  bool AllDone() const;
  // The step events' compress_seconds / wait_seconds, summed over steps and
  // ranks (where the training time went).
  double TotalCompressSeconds() const;
  double TotalWaitSeconds() const;

 private:
  struct RankState {
    std::optional<run_format::StartEvent> start;
    std::optional<run_format::DoneEvent> done;
    run_format::WireBytes bytes;  // latest cumulative
    double compress_seconds = 0;  // summed over its steps
    double wait_seconds = 0;
  };
  struct StepSums {
    double loss_sum = 0;
    int ranks = 0;
    run_format::WireBytes bytes;
  };
  struct LossSums {
    double sum = 0;
    int64_t count = 0;
  };

  void AddStep(int rank, const run_format::StepEvent& step);

  std::vector<RankState> ranks_;
  int64_t steps_per_epoch_ = 0;
  int64_t total_steps_ = 0;
  int64_t lead_steps_ = 0;
  int64_t lead_epoch_ordinal_ = 0;
  std::optional<int64_t> lead_epoch_;
  int64_t lead_steps_in_epoch_ = 0;
  double lead_loss_ = 0;
  std::map<int64_t, StepSums> steps_;
  std::map<int64_t, LossSums> epoch_losses_;
  std::vector<EpochPoint> epochs_;
  std::vector<run_format::EvalEvent> evals_;
  std::vector<StepTimes> step_times_;
};

}  // namespace entrograd::launcher

#endif  // ENTROGRAD_WORKERS_LAUNCHER_RUN_RECORD_H_
