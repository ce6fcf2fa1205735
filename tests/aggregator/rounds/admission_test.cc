// AdmitUpdate on hand-built job state, no registry: a new contribution, a
// duplicate of one held, a resend of a merged round (answered again only to
// a rank that has not applied it), and every refusal, in the documented
// order. Contributions are idempotent by (job, step, layer, rank).
#include "aggregator/rounds/admission.h"

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "aggregator/rounds/registry_options.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::testing {
namespace {

using aggregator::Admission;
using aggregator::AdmissionKind;
using aggregator::AdmitUpdate;
using aggregator::JobState;
using aggregator::RejectReason;
using aggregator::RoundKey;
using aggregator::RoundState;

constexpr uint64_t kNumel = 1000;
constexpr uint32_t kStepsAhead = 4;

// A job of `world_size` ranks, all joined, none applied anything, with one
// layer of kNumel elements.
JobState Job(uint32_t world_size) {
  JobState job;
  job.id = "admit";
  job.world_size = world_size;
  v1::LayerInfo layer;
  layer.set_name("w");
  layer.set_numel(kNumel);
  job.layers = {layer};
  job.members.resize(world_size);
  for (JobState::Member& member : job.members) member.ever_joined = true;
  return job;
}

v1::LayerUpdate Update(int64_t step, uint32_t layer = 0,
                       uint64_t numel = kNumel) {
  v1::LayerUpdate update;
  update.set_step(step);
  update.set_layer_index(layer);
  update.set_applied_step(step - 1);
  update.mutable_payload()->set_numel(numel);
  return update;
}

// Round `key` of `job` in flight, holding the contributions of `ranks`.
void InFlight(JobState& job, RoundKey key, std::vector<uint32_t> ranks) {
  auto round = std::make_unique<RoundState>();
  round->by_rank.resize(job.world_size);
  for (uint32_t rank : ranks) round->by_rank[rank] = DecodedPayload{};
  round->contributed = static_cast<int>(ranks.size());
  job.rounds[key] = std::move(round);
}

std::shared_ptr<const v1::AggregatorMessage> MergedMessage(int64_t step) {
  auto message = std::make_shared<v1::AggregatorMessage>();
  message->mutable_merged_layer()->set_step(step);
  return message;
}

TEST(AdmissionTest, AContributionTheRoundDoesNotHoldIsNew) {
  JobState job = Job(3);
  EXPECT_EQ(AdmitUpdate(job, 0, Update(0), kStepsAhead).kind,
            AdmissionKind::kNew);
  InFlight(job, {0, 0}, {1});
  EXPECT_EQ(AdmitUpdate(job, 0, Update(0), kStepsAhead).kind,
            AdmissionKind::kNew)
      << "another rank's contribution is held, not this one's";
}

TEST(AdmissionTest, AContributionTheRoundHoldsIsADuplicate) {
  JobState job = Job(3);
  InFlight(job, {0, 0}, {0, 2});
  const Admission admission = AdmitUpdate(job, 2, Update(0), kStepsAhead);
  EXPECT_EQ(admission.kind, AdmissionKind::kDuplicate);
  EXPECT_EQ(admission.merged, nullptr);
}

// A rank that reconnected resends a contribution of a round that completed
// while it was away: it gets the merged update again, the same message.
TEST(AdmissionTest, AResendOfAMergedRoundIsAnsweredWithTheMergedUpdate) {
  JobState job = Job(2);
  const auto merged = MergedMessage(0);
  job.completed[{0, 0}].message = merged;
  const Admission admission = AdmitUpdate(job, 1, Update(0), kStepsAhead);
  EXPECT_EQ(admission.kind, AdmissionKind::kResend);
  EXPECT_EQ(admission.merged, merged);
}

// Each rank applies each merged update exactly once: a rank that applied
// the step (from an earlier incarnation of the shard) gets nothing again,
// and while the merge runs the merge itself delivers.
TEST(AdmissionTest, AResendIsOnlyADuplicateWhenTheRankAppliedItOrItIsMerging) {
  JobState job = Job(2);
  job.members[1].applied_step = 0;
  job.completed[{0, 0}].message = MergedMessage(0);
  job.completed[{1, 0}];  // merging: no message yet
  EXPECT_EQ(AdmitUpdate(job, 1, Update(0), kStepsAhead).kind,
            AdmissionKind::kDuplicate);
  EXPECT_EQ(AdmitUpdate(job, 0, Update(1), kStepsAhead).kind,
            AdmissionKind::kDuplicate);
}

// A late contribution to an aborted round gets the round's own abort; it
// was counted when the round was aborted, so no reject reason.
TEST(AdmissionTest, AContributionToAnAbortedRoundGetsItsAbort) {
  JobState job = Job(2);
  job.aborted[{0, 0}] = absl::AbortedError("round timeout: rank 1");
  const Admission admission = AdmitUpdate(job, 0, Update(0), kStepsAhead);
  EXPECT_EQ(admission.kind, AdmissionKind::kRefused);
  EXPECT_THAT(admission.status,
              StatusIs(absl::StatusCode::kAborted, "round timeout: rank 1"));
  EXPECT_FALSE(admission.reject_reason.has_value());
}

TEST(AdmissionTest, AStepEveryRankAppliedIsStale) {
  JobState job = Job(2);
  for (JobState::Member& member : job.members) member.applied_step = 3;
  const Admission admission = AdmitUpdate(job, 0, Update(3), kStepsAhead);
  EXPECT_EQ(admission.kind, AdmissionKind::kRefused);
  EXPECT_THAT(admission.status,
              StatusIs(absl::StatusCode::kFailedPrecondition, "up to step 3"));
  EXPECT_EQ(admission.reject_reason, RejectReason::kStaleStep);
  EXPECT_EQ(AdmitUpdate(job, 0, Update(4), kStepsAhead).kind,
            AdmissionKind::kNew);
}

// The window is measured from the slowest rank that joined: one that never
// joined since the shard started does not hold the others back.
TEST(AdmissionTest, AStepTooFarAheadOfTheSlowestJoinedRankIsOutOfRange) {
  JobState job = Job(3);
  job.members[0].applied_step = 5;
  job.members[1].applied_step = 2;
  job.members[2].ever_joined = false;
  // Slowest joined rank applied 2: steps up to 2 + 1 + 4 = 7.
  EXPECT_EQ(AdmitUpdate(job, 0, Update(7), kStepsAhead).kind,
            AdmissionKind::kNew);
  const Admission admission = AdmitUpdate(job, 0, Update(8), kStepsAhead);
  EXPECT_EQ(admission.kind, AdmissionKind::kRefused);
  EXPECT_THAT(admission.status,
              StatusIs(absl::StatusCode::kOutOfRange, "at most 7"));
  EXPECT_EQ(admission.reject_reason, RejectReason::kTooFarAhead);
}

TEST(AdmissionTest, AnUnknownLayerOrAWrongNumelIsRefused) {
  const JobState job = Job(2);
  const Admission unknown = AdmitUpdate(job, 0, Update(0, 1), kStepsAhead);
  EXPECT_EQ(unknown.kind, AdmissionKind::kRefused);
  EXPECT_THAT(unknown.status, StatusIs(absl::StatusCode::kInvalidArgument,
                                       "layer_index 1 is unknown"));
  EXPECT_EQ(unknown.reject_reason, RejectReason::kUnknownLayer);
  const Admission numel =
      AdmitUpdate(job, 0, Update(0, 0, kNumel + 1), kStepsAhead);
  EXPECT_EQ(numel.kind, AdmissionKind::kRefused);
  EXPECT_THAT(numel.status, StatusIs(absl::StatusCode::kFailedPrecondition,
                                     "does not match layer 0"));
  EXPECT_EQ(numel.reject_reason, RejectReason::kNumelMismatch);
}

// The shape of the update is checked before what it means for the round: a
// wrong numel is refused even for a round that completed.
TEST(AdmissionTest, TheShapeIsCheckedBeforeTheRound) {
  JobState job = Job(2);
  job.completed[{0, 0}].message = MergedMessage(0);
  EXPECT_EQ(AdmitUpdate(job, 0, Update(0, 0, 3), kStepsAhead).reject_reason,
            RejectReason::kNumelMismatch);
}

TEST(AdmissionTest, AdmissionChangesNothing) {
  JobState job = Job(2);
  InFlight(job, {0, 0}, {0});
  job.completed[{1, 0}].message = MergedMessage(1);
  for (const v1::LayerUpdate& update : {Update(0), Update(1), Update(2)}) {
    (void)AdmitUpdate(job, 1, update, kStepsAhead);
  }
  EXPECT_EQ(job.rounds.size(), 1u);
  EXPECT_EQ(job.rounds[RoundKey(0, 0)]->contributed, 1);
  EXPECT_EQ(job.completed.size(), 1u);
  EXPECT_TRUE(job.aborted.empty());
  EXPECT_EQ(job.members[1].applied_step, -1);
}

TEST(UpdateStepsTest, StepsOutsideTheWindowArithmeticAreInvalid) {
  using aggregator::ValidateUpdateSteps;
  v1::LayerUpdate update;
  update.set_step(3);
  update.set_applied_step(2);
  ENTROGRAD_EXPECT_OK(ValidateUpdateSteps(update));
  update.set_step(-1);
  EXPECT_THAT(ValidateUpdateSteps(update),
              StatusIs(absl::StatusCode::kInvalidArgument, "negative"));
  update.set_step(aggregator::kMaxStep + 1);
  EXPECT_THAT(ValidateUpdateSteps(update),
              StatusIs(absl::StatusCode::kInvalidArgument, "largest step"));
  update.set_step(3);
  update.set_applied_step(-2);
  EXPECT_THAT(ValidateUpdateSteps(update),
              StatusIs(absl::StatusCode::kInvalidArgument, "below -1"));
  update.set_applied_step(3);
  EXPECT_THAT(ValidateUpdateSteps(update),
              StatusIs(absl::StatusCode::kInvalidArgument, "not below"));
}

TEST(MergedKeepFactorValidationTest, OnlyZeroOrOneToAMillionIsValid) {
  using aggregator::ValidateMergedKeepFactor;
  v1::LayerUpdate update;
  for (double factor : {0.0, 1.0, 2.5, 1e6}) {
    update.set_merged_keep_factor(factor);
    ENTROGRAD_EXPECT_OK(ValidateMergedKeepFactor(update)) << factor;
  }
  for (double factor : {0.5, -1.0, 1e6 + 1, std::nan(""),
                        std::numeric_limits<double>::infinity()}) {
    update.set_merged_keep_factor(factor);
    EXPECT_THAT(ValidateMergedKeepFactor(update),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "merged_keep_factor"))
        << factor;
  }
}

}  // namespace
}  // namespace entrograd::testing
