#include "workers/launcher/run_record.h"

#include <type_traits>

namespace entrograd::launcher {

using run_format::DoneEvent;
using run_format::EpochEvent;
using run_format::EvalEvent;
using run_format::StartEvent;
using run_format::StepEvent;
using run_format::WireBytes;
using run_format::WorkerEvent;

RunRecord::RunRecord(int world_size)
    : ranks_(world_size > 0 ? world_size : 1) {}

int64_t RunRecord::planned_epochs() const {
  if (steps_per_epoch_ <= 0) return 0;
  return (total_steps_ + steps_per_epoch_ - 1) / steps_per_epoch_;
}

void RunRecord::Add(int rank, const WorkerEvent& event) {
  if (rank < 0 || rank >= world_size()) return;
  RankState& state = ranks_[rank];
  std::visit(
      [&](const auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, StartEvent>) {
          state.start = e;
          if (steps_per_epoch_ == 0) {
            steps_per_epoch_ = e.steps_per_epoch;
            total_steps_ = e.total_steps;
          }
        } else if constexpr (std::is_same_v<T, StepEvent>) {
          AddStep(rank, e);
        } else if constexpr (std::is_same_v<T, EpochEvent>) {
          if (rank != 0) return;
          EpochPoint point;
          point.epoch = e.epoch;
          point.step = e.step;
          point.test_accuracy = e.test_accuracy;
          point.test_loss = e.test_loss;
          const LossSums& losses = epoch_losses_[e.epoch];
          point.train_loss = losses.count > 0 ? losses.sum / losses.count : 0;
          point.bytes = TotalBytes();
          epochs_.push_back(point);
        } else if constexpr (std::is_same_v<T, EvalEvent>) {
          if (rank == 0) evals_.push_back(e);
        } else if constexpr (std::is_same_v<T, DoneEvent>) {
          state.done = e;
          if (e.bytes.has_value()) state.bytes = *e.bytes;
        }
        // ErrorEvent: the launcher handles failures; nothing to record.
      },
      event);
}

void RunRecord::AddStep(int rank, const StepEvent& step) {
  RankState& state = ranks_[rank];
  state.bytes = step.bytes;
  // Per-step times: their sum is where the rank's time went.
  state.compress_seconds += step.compress_seconds;
  state.wait_seconds += step.wait_seconds;
  step_times_.push_back({step.forward_backward_seconds, step.compress_seconds,
                         step.wait_seconds, step.apply_seconds,
                         step.step_seconds});
  StepSums& sums = steps_[step.step];
  sums.loss_sum += step.loss;
  sums.ranks += 1;
  sums.bytes += step.bytes;
  LossSums& losses = epoch_losses_[step.epoch];
  losses.sum += step.loss;
  losses.count += 1;
  if (rank != 0) return;
  const std::optional<StartEvent>& start = ranks_[0].start;
  if (!lead_epoch_.has_value() && start.has_value() && start->first_step > 0 &&
      steps_per_epoch_ > 0) {
    // Resumed from a checkpoint: count from where it left off.
    lead_steps_ = start->first_step;
    lead_epoch_ = step.epoch;
    lead_epoch_ordinal_ = start->first_step / steps_per_epoch_ + 1;
    lead_steps_in_epoch_ = start->first_step % steps_per_epoch_;
  }
  ++lead_steps_;
  lead_loss_ = step.loss;
  if (!lead_epoch_.has_value() || *lead_epoch_ != step.epoch) {
    lead_epoch_ = step.epoch;
    ++lead_epoch_ordinal_;
    lead_steps_in_epoch_ = 0;
  }
  ++lead_steps_in_epoch_;
}

WireBytes RunRecord::TotalBytes() const {
  WireBytes total;
  for (const RankState& state : ranks_) total += state.bytes;
  return total;
}

std::vector<StepPoint> RunRecord::Steps(bool include_partial) const {
  std::vector<StepPoint> points;
  points.reserve(steps_.size());
  for (const auto& [step, sums] : steps_) {
    if (!include_partial && sums.ranks < world_size()) continue;
    StepPoint point;
    point.step = step;
    point.mean_loss = sums.loss_sum / sums.ranks;
    point.ranks = sums.ranks;
    point.bytes = sums.bytes;
    points.push_back(point);
  }
  return points;
}

bool RunRecord::AllDone() const {
  for (const RankState& state : ranks_) {
    if (!state.done.has_value()) return false;
  }
  return true;
}

double RunRecord::TotalCompressSeconds() const {
  double total = 0;
  for (const RankState& state : ranks_) total += state.compress_seconds;
  return total;
}

double RunRecord::TotalWaitSeconds() const {
  double total = 0;
  for (const RankState& state : ranks_) total += state.wait_seconds;
  return total;
}

}  // namespace entrograd::launcher
