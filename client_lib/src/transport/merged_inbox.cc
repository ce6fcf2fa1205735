#include "transport/merged_inbox.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace entrograd {

MergedInbox::MergedInbox(int64_t applied_step) : applied_step_(applied_step) {}

bool MergedInbox::Wants(int64_t step, uint32_t layer) const {
  absl::MutexLock lock(&mutex_);
  if (step <= applied_step_) return false;
  auto it = slots_.find(Key(step, layer));
  if (it == slots_.end()) return true;
  const Slot& slot = it->second;
  if (slot.returned) return false;
  return !(slot.has_outcome && slot.error.ok());
}

bool MergedInbox::Deliver(int64_t step, uint32_t layer,
                          absl::StatusOr<MergedLayerUpdate> outcome) {
  absl::MutexLock lock(&mutex_);
  if (step <= applied_step_) return false;
  Slot& slot = slots_[Key(step, layer)];
  if (slot.returned) return false;
  if (slot.has_outcome) {
    // Only a merged update may replace what is waiting: an error not yet
    // returned. A duplicate merged update, or an error after a merged
    // update, is dropped.
    if (slot.error.ok() || !outcome.ok()) return false;
  }
  slot.has_outcome = true;
  if (outcome.ok()) {
    slot.error = absl::OkStatus();
    slot.merged = std::move(*outcome);
  } else {
    slot.error = outcome.status();
  }
  changed_.SignalAll();
  return true;
}

absl::StatusOr<MergedLayerUpdate> MergedInbox::Wait(int64_t step,
                                                    uint32_t layer,
                                                    absl::Time deadline) {
  absl::MutexLock lock(&mutex_);
  const Key key(step, layer);
  while (true) {
    if (step <= applied_step_) {
      return absl::FailedPreconditionError(
          absl::StrCat("step ", step, " is already applied (applied step ",
                       applied_step_, "); its merged layers are gone"));
    }
    auto it = slots_.find(key);
    if (it != slots_.end()) {
      Slot& slot = it->second;
      if (slot.returned) {
        return absl::FailedPreconditionError(
            absl::StrCat("the outcome of step ", step, ", layer ", layer,
                         " was already returned by an earlier WaitMerged"));
      }
      if (slot.has_outcome) {
        slot.has_outcome = false;
        slot.returned = true;
        if (!slot.error.ok()) return slot.error;
        return std::move(slot.merged);
      }
    }
    if (!fatal_.ok()) return fatal_;
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("no merged update for step ", step, ", layer ", layer,
                       " within the merge timeout"));
    }
    changed_.WaitWithDeadline(&mutex_, deadline);
  }
}

void MergedInbox::MarkApplied(int64_t step) {
  absl::MutexLock lock(&mutex_);
  if (step <= applied_step_) return;
  applied_step_ = step;
  slots_.erase(slots_.begin(), slots_.upper_bound(Key(step, UINT32_MAX)));
  changed_.SignalAll();
}

int64_t MergedInbox::applied_step() const {
  absl::MutexLock lock(&mutex_);
  return applied_step_;
}

void MergedInbox::Fail(absl::Status status) {
  if (status.ok()) return;
  absl::MutexLock lock(&mutex_);
  if (!fatal_.ok()) return;
  fatal_ = std::move(status);
  changed_.SignalAll();
}

absl::Status MergedInbox::fatal() const {
  absl::MutexLock lock(&mutex_);
  return fatal_;
}

}  // namespace entrograd
