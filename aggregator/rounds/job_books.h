// The books of what one job holds: taking rounds out, recording why a round
// was aborted, and releasing what every rank applied, each keeping the
// registry's totals (the bytes counted against the quota, the rounds in
// flight) equal to what the jobs hold. Pure functions on JobState: the
// registry calls them under its lock, tests on hand-built state.
// Thread safety: none of their own; the caller keeps `job` and `held` from
// changing meanwhile.
#ifndef ENTROGRAD_AGGREGATOR_ROUNDS_JOB_BOOKS_H_
#define ENTROGRAD_AGGREGATOR_ROUNDS_JOB_BOOKS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "aggregator/rounds/job_state.h"

namespace entrograd::aggregator {

// What a registry holds over all its jobs.
struct HeldTotals {
  // Everything counted against the memory quota (JobRegistry::BytesHeld).
  int64_t bytes = 0;
  // Rounds in flight over all jobs (JobRegistry::RoundsInFlight).
  int64_t rounds_in_flight = 0;
};

// Removes round `key` from `job`'s rounds in flight; nothing when it is not
// in flight.
void EraseRound(JobState& job, RoundKey key, HeldTotals& held);

// Removes every round in flight of `job`.
void DropRounds(JobState& job, HeldTotals& held);

// Records `reason` as why round `key` was aborted (replacing an earlier
// record), then forgets the oldest records beyond `max_records`: a rank that
// never joins keeps every step from being applied by all, so records are
// not released by progress alone.
void RecordAbort(JobState& job, RoundKey key, const absl::Status& reason,
                 int max_records, HeldTotals& held);

// Frees what can never be needed again once every rank applied a step
// (JobState::MinAppliedStep): rounds in flight of those steps (rebuilt by
// ranks resending after a restart), their merged updates (except those
// still merging) and their abort records.
void ReleaseApplied(JobState& job, HeldTotals& held);

// Whether `job` can end: no live stream, no round in flight, no merge
// running (a merge finishing later needs its job).
bool JobCanEnd(const JobState& job);

// Removes from `held` every byte `job` still holds (its table, merged
// updates and abort records), as the job ends. Call only when JobCanEnd.
void ReleaseJob(const JobState& job, HeldTotals& held);

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_ROUNDS_JOB_BOOKS_H_
