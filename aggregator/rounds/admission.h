// Admission of one LayerUpdate to its job's rounds: a new contribution, a
// duplicate of one already held, a resend of a round already merged (which
// is answered with the merged update again), or a refusal. Contributions
// are idempotent by (job, step, layer, rank): this is where that holds.
//
// Pure: AdmitUpdate reads a job's state and changes nothing, so the registry
// runs it under its lock and tests run it on a hand-built JobState. What
// follows an admission (counting, reserving quota, decoding, storing) is the
// registry's.
#ifndef ENTROGRAD_AGGREGATOR_ROUNDS_ADMISSION_H_
#define ENTROGRAD_AGGREGATOR_ROUNDS_ADMISSION_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "aggregator/metrics/aggregator_metrics.h"
#include "aggregator/rounds/job_state.h"
#include "entrograd/v1/aggregator.pb.h"

namespace entrograd::aggregator {

enum class AdmissionKind {
  // The round does not hold this rank's contribution: decode and accept it.
  kNew,
  // Held already, or its round is complete and the sender needs nothing
  // (it applied the step, or the merge is still running and will deliver
  // to it): drop it and count a duplicate.
  kDuplicate,
  // Its round is merged and the sender has not applied it (it reconnected
  // and resent): drop it, count a duplicate and send `merged` again.
  kResend,
  // Refused with `status`; nothing changes.
  kRefused,
};

struct Admission {
  AdmissionKind kind = AdmissionKind::kRefused;
  // kRefused: the status the sender gets (its RoundError).
  absl::Status status;
  // kRefused: the entrograd_rejects_total reason; none when the answer is
  // the round's recorded abort (counted when the round was aborted).
  std::optional<RejectReason> reject_reason;
  // kResend: the merged update to send to the sender again.
  std::shared_ptr<const v1::AggregatorMessage> merged;
};

// The step fields of `update`, checked before any state is read: OK, or
// INVALID_ARGUMENT for a step below 0 or above kMaxStep, an applied_step
// below -1, or an applied_step not below the step. With these, no
// step-window sum can overflow. Thread-safe (pure).
absl::Status ValidateUpdateSteps(const v1::LayerUpdate& update);

// The largest global top-k factor a worker may ask for (LayerUpdate.
// merged_keep_factor): far above any useful one, low enough that
// factor * (2^32 - 1) is exact in a double's integer range.
inline constexpr double kMaxMergedKeepFactor = 1e6;

// INVALID_ARGUMENT, naming the field and its value, for a merged_keep_factor
// that is neither 0 (the whole union) nor a finite number in
// [1, kMaxMergedKeepFactor]. Thread-safe (pure).
absl::Status ValidateMergedKeepFactor(const v1::LayerUpdate& update);

// Admits `update` (its steps already validated) from rank `rank` of `job`,
// whose applied step already reflects update.applied_step. Checks in this
// order, the first that applies deciding:
//   layer_index outside the table: kRefused, INVALID_ARGUMENT;
//   payload numel not the layer's: kRefused, FAILED_PRECONDITION;
//   round merged (or being merged): kResend when merged and the sender's
//     applied step is below the step, else kDuplicate;
//   round aborted: kRefused with the recorded abort status;
//   step at or below what every rank applied: kRefused, FAILED_PRECONDITION;
//   step beyond the slowest joined rank's applied step + 1 +
//     `max_steps_ahead`: kRefused, OUT_OF_RANGE;
//   round in flight holding this rank's contribution: kDuplicate;
//   otherwise kNew.
// `rank` must be below job.members.size(). Thread safety: reads `job` only;
// the caller keeps it from changing meanwhile.
Admission AdmitUpdate(const JobState& job, uint32_t rank,
                      const v1::LayerUpdate& update, uint32_t max_steps_ahead);

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_ROUNDS_ADMISSION_H_
