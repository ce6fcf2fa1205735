// Where merged layers (and round failures) wait for Client::WaitMerged: one
// slot per (step, layer). Each round's outcome is handed to the caller once:
// a merged update for a step already applied, or for a slot that already
// holds or returned one (a resend answered again after a reconnect), is
// dropped.
//
// Thread safety: all methods are thread-safe. Wait blocks on an
// absl::CondVar; every other method only takes the mutex briefly.
#ifndef ENTROGRAD_TRANSPORT_MERGED_INBOX_H_
#define ENTROGRAD_TRANSPORT_MERGED_INBOX_H_

#include <cstdint>
#include <map>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "entrograd/client.h"

namespace entrograd {

class MergedInbox {
 public:
  // `applied_step`: the last step the worker applied (-1 for none).
  explicit MergedInbox(int64_t applied_step);

  MergedInbox(const MergedInbox&) = delete;
  MergedInbox& operator=(const MergedInbox&) = delete;

  // Whether an outcome for (step, layer) would be kept now: the step is not
  // applied and the slot has not received (or returned) a merged update.
  bool Wants(int64_t step, uint32_t layer) const;

  // Stores the outcome of round (step, layer): a merged update, or the
  // round's failure. Dropped (returns false) for an applied step, or when
  // the slot already holds or returned a merged update; a merged update
  // replaces an error not yet returned; a second error is dropped.
  bool Deliver(int64_t step, uint32_t layer,
               absl::StatusOr<MergedLayerUpdate> outcome);

  // Blocks until the outcome of (step, layer) is there, then returns it and
  // marks the slot returned. Errors: the round's error; FAILED_PRECONDITION
  // when the step is applied or the slot's outcome was already returned;
  // the fatal status once Fail was called (an outcome already received is
  // still returned); DEADLINE_EXCEEDED at `deadline`.
  absl::StatusOr<MergedLayerUpdate> Wait(int64_t step, uint32_t layer,
                                         absl::Time deadline);

  // Raises the applied watermark to `step` (never lowers it) and forgets
  // the slots of steps <= it.
  void MarkApplied(int64_t step);
  int64_t applied_step() const;

  // Fails every pending and future Wait without an outcome with `status`
  // (not OK). The first call wins.
  void Fail(absl::Status status);
  // OK, or the status Fail was first called with.
  absl::Status fatal() const;

 private:
  using Key = std::pair<int64_t, uint32_t>;  // (step, layer)
  struct Slot {
    bool has_outcome = false;  // and not yet returned
    absl::Status error;        // the outcome when not OK
    MergedLayerUpdate merged;  // the outcome when error is OK
    bool returned = false;
  };

  mutable absl::Mutex mutex_;
  absl::CondVar changed_;
  int64_t applied_step_ ABSL_GUARDED_BY(mutex_);
  std::map<Key, Slot> slots_ ABSL_GUARDED_BY(mutex_);
  absl::Status fatal_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace entrograd

#endif  // ENTROGRAD_TRANSPORT_MERGED_INBOX_H_
