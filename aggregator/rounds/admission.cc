#include "aggregator/rounds/admission.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "aggregator/rounds/log_text.h"
#include "aggregator/rounds/registry_options.h"

namespace entrograd::aggregator {

namespace {

Admission Refused(absl::Status status, std::optional<RejectReason> reason) {
  Admission admission;
  admission.kind = AdmissionKind::kRefused;
  admission.status = std::move(status);
  admission.reject_reason = reason;
  return admission;
}

Admission Of(AdmissionKind kind) {
  Admission admission;
  admission.kind = kind;
  return admission;
}

}  // namespace

absl::Status ValidateUpdateSteps(const v1::LayerUpdate& update) {
  if (update.step() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer_update.step ", update.step(), " is negative"));
  }
  if (update.step() > kMaxStep) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer_update.step ", update.step(),
                     " is above the largest step ", kMaxStep));
  }
  if (update.applied_step() < -1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "layer_update.applied_step ", update.applied_step(), " is below -1"));
  }
  // A rank stamps applied_step when it first sends a contribution (a resend
  // carries it unchanged) and applies a step only after its merge, so the
  // stamp is always below the step.
  if (update.applied_step() >= update.step()) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer_update.applied_step ", update.applied_step(),
                     " is not below layer_update.step ", update.step()));
  }
  return absl::OkStatus();
}

absl::Status ValidateMergedKeepFactor(const v1::LayerUpdate& update) {
  const double factor = update.merged_keep_factor();
  // Written so that NaN fails too.
  if (factor == 0.0 || (factor >= 1.0 && factor <= kMaxMergedKeepFactor)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "layer_update.merged_keep_factor ", factor,
      " is neither 0 (the whole union) nor in [1, ", kMaxMergedKeepFactor,
      "]"));
}

Admission AdmitUpdate(const JobState& job, uint32_t rank,
                      const v1::LayerUpdate& update, uint32_t max_steps_ahead) {
  if (update.layer_index() >= job.layers.size()) {
    return Refused(
        absl::InvalidArgumentError(absl::StrCat(
            "layer_update.layer_index ", update.layer_index(),
            " is unknown; the layer table has ", job.layers.size(), " layers")),
        RejectReason::kUnknownLayer);
  }
  const v1::LayerInfo& layer = job.layers[update.layer_index()];
  if (update.payload().numel() != layer.numel()) {
    return Refused(
        absl::FailedPreconditionError(absl::StrCat(
            "layer_update.payload.numel ", update.payload().numel(),
            " does not match layer ", update.layer_index(), " (\"",
            LogText(layer.name()), "\") of ", layer.numel(), " elements")),
        RejectReason::kNumelMismatch);
  }
  const RoundKey key(update.step(), update.layer_index());
  if (auto done = job.completed.find(key); done != job.completed.end()) {
    // A resend after a reconnect: answer with the merged update again,
    // unless the sender already applied it or the merge still runs.
    if (done->second.message != nullptr &&
        job.members[rank].applied_step < update.step()) {
      Admission resend = Of(AdmissionKind::kResend);
      resend.merged = done->second.message;
      return resend;
    }
    return Of(AdmissionKind::kDuplicate);
  }
  if (auto aborted = job.aborted.find(key); aborted != job.aborted.end()) {
    return Refused(aborted->second, std::nullopt);
  }
  if (update.step() <= job.MinAppliedStep()) {
    return Refused(absl::FailedPreconditionError(absl::StrCat(
                       "layer_update.step ", update.step(),
                       " is already merged and applied by every rank (up to "
                       "step ",
                       job.MinAppliedStep(), ")")),
                   RejectReason::kStaleStep);
  }
  if (const int64_t limit = job.MinJoinedAppliedStep() + 1 + max_steps_ahead;
      update.step() > limit) {
    return Refused(
        absl::OutOfRangeError(absl::StrCat(
            "layer_update.step ", update.step(), " is too far ahead (at most ",
            limit, " while the slowest rank applied step ",
            job.MinJoinedAppliedStep(), ")")),
        RejectReason::kTooFarAhead);
  }
  if (auto round = job.rounds.find(key);
      round != job.rounds.end() && round->second->by_rank[rank].has_value()) {
    return Of(AdmissionKind::kDuplicate);
  }
  return Of(AdmissionKind::kNew);
}

}  // namespace entrograd::aggregator
