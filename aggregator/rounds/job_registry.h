// JobRegistry: the aggregator's whole state, which is only the rounds in
// flight (DESIGN.md "Stateless aggregator"). Jobs appear on their first Join
// and vanish when their last stream leaves with no round in flight.
//
// A round is (job, step, layer). It completes when every rank of the job has
// contributed; its merged update (ALGORITHM.md step 6) is sent to every
// rank's stream and kept until every rank reports (applied_step) that it
// applied it, so a rank that missed it can get it again by resending its
// contribution. A contribution already held is a duplicate: dropped, counted
// and, when the round is complete, answered with the merged update again.
//
// Failure is loud and bounded: a round still incomplete after the round
// timeout is aborted for every rank (ABORTED naming the missing ranks); a
// contribution holding NaN/Inf aborts its round for every rank; anything
// malformed is refused with a precise status and changes no state.
//
// Memory is bounded by RegistryOptions::memory_quota_bytes, and everything a
// client can make the shard allocate is counted against it before it is
// allocated: a job's layer table and member slots (at its first Join), a
// round's per-rank slots (at its first contribution, so even empty payloads
// cost something), the decoded form of a contribution (before decoding), the
// merge of a complete round (before merging), merged updates kept for
// resends, and aborted-round records. BytesHeld() is that sum. Counts bound
// the rest: rounds in flight and aborted records per job
// (max_rounds_per_job), layers per job (max_layers), jobs (max_jobs).
//
// Thread safety: all methods are thread-safe. Merging and sending happen
// outside the registry lock.
#ifndef ENTROGRAD_AGGREGATOR_ROUNDS_JOB_REGISTRY_H_
#define ENTROGRAD_AGGREGATOR_ROUNDS_JOB_REGISTRY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "aggregator/metrics/aggregator_metrics.h"
#include "aggregator/rounds/stream_sink.h"
#include "entrograd/codec.h"
#include "entrograd/v1/aggregator.pb.h"

namespace entrograd::aggregator {

struct RegistryOptions {
  // A round not complete this long after its first contribution is aborted.
  absl::Duration round_timeout = absl::Seconds(60);
  // Bytes held at once (see the top of this file for what counts); beyond
  // it a contribution is refused with a RESOURCE_EXHAUSTED RoundError
  // (retryable) and a Join creating a job with RESOURCE_EXHAUSTED. Default
  // 4 GiB.
  int64_t memory_quota_bytes = int64_t{4} << 30;
  // Jobs at once; a Join of a further job gets RESOURCE_EXHAUSTED.
  int max_jobs = 64;
  // Largest world size a Join may declare.
  uint32_t max_world_size = 4096;
  // Largest layer table a Join may declare. Flag --max_layers.
  int max_layers = 100000;
  // Rounds in flight per job: a contribution that would start one more is
  // refused with RESOURCE_EXHAUSTED naming --max_rounds_per_job (retryable:
  // rounds complete or time out). Also the most aborted-round records a job
  // keeps; beyond it the oldest is forgotten (a late resend of that round
  // then starts it again, and the round timeout ends it again).
  int max_rounds_per_job = 65536;
  // How far a Join's incarnation may be ahead of this shard's clock, read as
  // microseconds since the Unix epoch (the client's documented choice). A
  // Join beyond it gets FAILED_PRECONDITION. Bounds how long a token holder
  // who joins with a huge incarnation can lock out the rank's own restarts.
  // Flag --max_incarnation_lead.
  absl::Duration max_incarnation_lead = absl::Hours(1);
  // How many steps beyond the slowest rank's applied step a contribution
  // may be (OUT_OF_RANGE beyond).
  uint32_t max_steps_ahead = 4;
  // Reported in JoinAck.
  std::string shard_name = "aggregator";
  // Largest message a stream may carry, in bytes (reported in JoinAck). A
  // merged update that encodes larger aborts its round with
  // RESOURCE_EXHAUSTED instead of breaking every rank's stream on write.
  uint64_t max_message_bytes = uint64_t{256} << 20;
};

// Steps (and applied steps) above this are refused with INVALID_ARGUMENT:
// far beyond any training run, and low enough that the step-window
// arithmetic (applied step + 1 + max_steps_ahead) cannot overflow.
inline constexpr int64_t kMaxStep = int64_t{1} << 62;

// Longest layer name a Join may declare, in bytes. Names are 1 to this many
// printable ASCII bytes (0x20-0x7e); they are stored per job and named in
// logs and errors, so they are untrusted input with a bound.
inline constexpr size_t kMaxLayerNameBytes = 256;

// What the registry counts against the quota, exposed so tests and docs can
// size a quota. All in bytes; all pure.
// A round's fixed part and its per-rank slots.
int64_t RoundOverheadBytes(uint32_t world_size);
// Upper bound of merging a round of a `numel`-element layer whose ranks
// carry `entries` (index, value) pairs in all (numel per dense rank): the
// merged entries, the encoded payload and its copy into the message.
int64_t MergeBytesBound(uint64_t numel, uint64_t entries);
// A job's layer table and member slots, as declared by `join`.
int64_t JobTableBytes(const v1::Join& join);

// Who a stream belongs to, fixed at Join.
struct MemberId {
  std::string job_id;
  uint32_t rank = 0;
  uint64_t incarnation = 0;
  // Which instance of the job: a job that ended and was created again under
  // the same id (maybe with another world size) has a new generation, so a
  // stale id from a replaced stream can never reach the new job's members.
  uint64_t job_generation = 0;
};

class JobRegistry {
 public:
  // `metrics` may be null; it must outlive the registry.
  JobRegistry(RegistryOptions options, AggregatorMetrics* metrics);
  ~JobRegistry();

  JobRegistry(const JobRegistry&) = delete;
  JobRegistry& operator=(const JobRegistry&) = delete;

  // Validates `join`, registers `sink` as the stream of its rank and queues
  // the JoinAck on `sink` before the registry lock is released, so the ack is
  // always the stream's first message: a round finishing or aborting on
  // another thread can reach the sink only after it. Returns the member's
  // id for Contribute and Leave. On error nothing is registered or sent.
  // `authorized_job`, when set, is the job the caller's token grants.
  // Errors: INVALID_ARGUMENT (job id, world size, rank, layer table,
  // applied_step below -1 or above kMaxStep; a layer name empty, longer than
  // kMaxLayerNameBytes or not printable ASCII, naming the layer's index);
  // PERMISSION_DENIED (token for another job); FAILED_PRECONDITION (world
  // size, layer table or parameter hash differs from the job's, naming the
  // first difference; an incarnation older than the live one, or more than
  // max_incarnation_lead ahead of this shard's clock);
  // ALREADY_EXISTS (same rank and incarnation already live);
  // RESOURCE_EXHAUSTED (job limit; memory quota for a new job's table);
  // UNAVAILABLE (draining). Layer names and job ids appear in messages
  // escaped and cut (LogText), never in full.
  // A newer incarnation replaces the live stream of the rank, which is
  // closed with ABORTED.
  absl::StatusOr<MemberId> Join(
      const v1::Join& join, const std::optional<std::string>& authorized_job,
      std::shared_ptr<StreamSink> sink);

  // One LayerUpdate from a joined member. OK when accepted or dropped as a
  // duplicate. Errors refuse this update only and change nothing:
  // FAILED_PRECONDITION (member no longer joined, e.g. an id of an ended
  // job; numel not the layer's; step already released); INVALID_ARGUMENT
  // (unknown layer, step negative or above kMaxStep, applied_step below -1
  // or not below step, malformed payload); OUT_OF_RANGE (step too far
  // ahead); RESOURCE_EXHAUSTED (memory quota, or max_rounds_per_job rounds
  // in flight; reason SHARD_LIMIT). A NaN/Inf value aborts the round for
  // every rank and returns ABORTED with reason NON_FINITE. When the merged
  // update encodes larger than max_message_bytes, the round is aborted for
  // every rank with a RESOURCE_EXHAUSTED RoundError, reason
  // MERGED_TOO_LARGE. The reason rides on the returned status
  // (RoundErrorReasonOf, round_error.h).
  absl::Status Contribute(const MemberId& member,
                          const v1::LayerUpdate& update);

  // The stream of `member` ended; `sink` identifies it (a replaced stream
  // leaving does not remove its successor; an id of an ended job is ignored).
  // When the job's last stream leaves, its rounds in flight are dropped
  // (every rank resends what it keeps after it joins again) and the job
  // ends, so no record outlives its streams.
  void Leave(const MemberId& member, const StreamSink* sink);

  // Aborts every round whose deadline is before `now`. Returns how many.
  int AbortExpiredRounds(absl::Time now);

  // Stops accepting Joins (UNAVAILABLE) for draining.
  void StopAcceptingJoins();
  // Aborts every round in flight with `reason` (ABORTED), for shutdown.
  void AbortAllRounds(absl::string_view reason);

  int64_t RoundsInFlight() const;
  int64_t BytesHeld() const;
  int JobCount() const;
  // Members with a live stream, over all jobs (entrograd_active_streams).
  int64_t ActiveStreams() const;
  int64_t Duplicates() const;

 private:
  struct Job;
  struct Round;
  struct Delivery {
    std::shared_ptr<StreamSink> sink;
    std::shared_ptr<const v1::AggregatorMessage> message;
  };

  absl::Status ValidateJoinShape(const v1::Join& join) const;
  // The job `member` joined, or null when that job ended (its generation is
  // gone) or the id does not fit it.
  Job* FindJobOfLocked(const MemberId& member)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // The JoinAck for a member of `job`, as it stands now.
  std::shared_ptr<const v1::AggregatorMessage> JoinAckFor(const Job& job) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Creates the job `join` declares (the caller checked the job limit).
  Job& CreateJobLocked(const v1::Join& join)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  absl::Status CompareWithJob(const Job& job, const v1::Join& join) const;
  // OK when `bytes` more fit in the quota, else RESOURCE_EXHAUSTED saying
  // what they were for (reason SHARD_LIMIT).
  absl::Status CheckQuotaLocked(int64_t bytes, absl::string_view what) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // RESOURCE_EXHAUSTED naming --max_rounds_per_job when round `key` is not
  // in flight and `job` has the most rounds in flight it may.
  absl::Status CheckRoundLimitLocked(const Job& job,
                                     std::pair<int64_t, uint32_t> key) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // The second half of Contribute, once `decoded` (an error: a non-finite
  // value) is known: counts and stores the contribution, or aborts the
  // round. Sets *complete (and *merge_reserved) when the round is complete.
  absl::Status AcceptLocked(const MemberId& member,
                            const v1::LayerUpdate& update,
                            std::pair<int64_t, uint32_t> key, uint64_t numel,
                            const std::string& layer_name,
                            absl::StatusOr<DecodedPayload>& decoded,
                            std::unique_ptr<Round>* complete,
                            int64_t* merge_reserved,
                            std::vector<Delivery>* deliveries)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Returns decode reservation `bytes` taken by Contribute.
  void ReleaseReservation(int64_t bytes);
  // Records why round `key` of `job` was aborted, within the job's bound.
  void RecordAbortLocked(Job& job, std::pair<int64_t, uint32_t> key,
                         const absl::Status& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Drops the rounds in flight of `job` (no rank can complete them).
  void DropRoundsLocked(Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Aborts round (step, layer) of `job`: error to every live rank.
  void AbortRoundLocked(Job& job, int64_t step, uint32_t layer,
                        const absl::Status& reason,
                        std::vector<Delivery>* deliveries)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Frees merged updates every rank applied and forgets released rounds.
  void ReleaseAppliedLocked(Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  void MaybeDropJobLocked(const std::string& job_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  void UpdateGaugesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  int64_t ActiveStreamsLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Merges a complete round (outside the lock) and delivers it.
  // `merge_reserved` is the MergeBytesBound taken for it.
  void FinishRound(const std::string& job_id, int64_t step, uint32_t layer,
                   std::unique_ptr<Round> round, int64_t merge_reserved);
  static void Deliver(std::vector<Delivery>& deliveries);

  const RegistryOptions options_;
  AggregatorMetrics* const metrics_;

  mutable absl::Mutex mutex_;
  std::map<std::string, std::unique_ptr<Job>> jobs_ ABSL_GUARDED_BY(mutex_);
  int64_t bytes_held_ ABSL_GUARDED_BY(mutex_) = 0;
  int64_t rounds_in_flight_ ABSL_GUARDED_BY(mutex_) = 0;
  int64_t duplicates_ ABSL_GUARDED_BY(mutex_) = 0;
  bool accepting_joins_ ABSL_GUARDED_BY(mutex_) = true;
  // The generation the next created job gets (MemberId::job_generation).
  uint64_t next_job_generation_ ABSL_GUARDED_BY(mutex_) = 1;
};

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_ROUNDS_JOB_REGISTRY_H_
