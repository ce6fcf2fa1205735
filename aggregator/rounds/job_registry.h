// JobRegistry: the aggregator's whole state, which is only the rounds in
// flight (docs/DESIGN.md "Stateless aggregator, nothing lost"). Jobs appear on their first Join
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
// The parts: admission.h decides what an update is (new, duplicate, resend
// or refused), merge_round.h merges a complete round without any lock,
// job_state.h is the state kept per job and round, job_books.h keeps the
// totals right as rounds and records come and go, memory_accounting.h sizes
// what the quota counts, join_validation.h checks a Join. The registry holds
// the lock and puts them together.
//
// Thread safety: all methods are thread-safe and may block only on the
// registry's lock. Decoding, merging, encoding and sending happen outside
// it, on the calling thread: the server calls Contribute from its merge pool
// (aggregator/service/merge_pool.h), never from a gRPC callback thread.
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
#include "aggregator/rounds/job_books.h"
#include "aggregator/rounds/job_state.h"
#include "aggregator/rounds/memory_accounting.h"
#include "aggregator/rounds/registry_options.h"
#include "aggregator/rounds/stream_sink.h"
#include "entrograd/codec.h"
#include "entrograd/v1/aggregator.pb.h"

namespace entrograd::aggregator {

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
  // `metrics` must outlive the registry; null reports to
  // AggregatorMetrics::Null().
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
  // Blocks for the decode, and for the merge and encode of the round the
  // update completes, on the calling thread: call it from a worker thread
  // (the server's merge pool), never from a gRPC callback.
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
  struct Delivery {
    std::shared_ptr<StreamSink> sink;
    std::shared_ptr<const v1::AggregatorMessage> message;
  };
  // A new contribution, as Contribute's first phase admitted it: its layer
  // and the quota reserved to decode it (returned once it is decoded).
  struct NewContribution {
    uint64_t numel = 0;
    std::string layer_name;
    int64_t reserved_bytes = 0;
  };
  // A round a contribution completed, taken out of its job to be merged,
  // and the quota reserved for the merge.
  struct CompleteRound {
    std::unique_ptr<RoundState> round;
    int64_t merge_reserved_bytes = 0;
    // What every member can decode, when the round completed.
    std::vector<ValueType> downlink_value_types;
    bool downlink_gap_range = false;
  };

  // Counts `reason` and returns `status`.
  absl::Status Reject(RejectReason reason, absl::Status status);

  // --- Join ---
  // The job `join` joins, created when it is new: refuses (and counts) a
  // draining shard, the job limit, a mismatch with the existing job, a new
  // job's table beyond the quota, an incarnation too far ahead.
  absl::StatusOr<JobState*> JobForJoinLocked(const v1::Join& join)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Creates the job `join` declares (the caller checked the limits).
  JobState& CreateJobLocked(const v1::Join& join)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // The JoinAck for a member of `job`, as it stands now.
  std::shared_ptr<const v1::AggregatorMessage> JoinAckFor(
      const JobState& job) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // The job `member` joined, or null when that job ended (its generation is
  // gone) or the id does not fit it.
  JobState* FindJobOfLocked(const MemberId& member)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  // --- Contribute, in its three phases ---
  // 1, under the lock: records the sender's applied step and admits the
  // update (admission.h). A new contribution gets its decode reserved
  // against the quota; a duplicate or resend returns nullopt, with the
  // resend's answer in `deliveries`; a refusal is returned.
  absl::StatusOr<std::optional<NewContribution>> Admit(
      const MemberId& member, const v1::LayerUpdate& update,
      std::vector<Delivery>* deliveries) ABSL_LOCKS_EXCLUDED(mutex_);
  // 2 is the decode, without the lock (in Contribute). 3, under the lock:
  // returns the decode reservation and accepts `decoded` (an error: a
  // non-finite value, which aborts the round). Sets *complete when the
  // contribution completes its round.
  absl::Status Accept(const MemberId& member, const v1::LayerUpdate& update,
                      const NewContribution& contribution,
                      absl::StatusOr<DecodedPayload>& decoded,
                      std::optional<CompleteRound>* complete,
                      std::vector<Delivery>* deliveries)
      ABSL_LOCKS_EXCLUDED(mutex_);
  absl::Status AcceptLocked(const MemberId& member,
                            const v1::LayerUpdate& update,
                            const NewContribution& contribution,
                            absl::StatusOr<DecodedPayload>& decoded,
                            std::optional<CompleteRound>* complete,
                            std::vector<Delivery>* deliveries)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Aborts the round of `update` because rank `rank` sent a non-finite
  // value (`decode_error`); every other live rank gets the RoundError, the
  // sender gets the returned status instead.
  absl::Status RejectNonFiniteLocked(JobState& job, uint32_t rank,
                                     const v1::LayerUpdate& update,
                                     const std::string& layer_name,
                                     const absl::Status& decode_error,
                                     std::vector<Delivery>* deliveries)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Merges a complete round (MergeRound, outside the lock), then publishes
  // the merged update or aborts the round, and delivers.
  void FinishRound(const std::string& job_id, RoundKey key,
                   CompleteRound complete) ABSL_LOCKS_EXCLUDED(mutex_);
  // Keeps `message` for resends and queues it for every live rank that has
  // not applied its step.
  void PublishMergedLocked(JobState& job, RoundKey key,
                           std::shared_ptr<const v1::AggregatorMessage> message,
                           std::vector<Delivery>* deliveries)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  // --- Limits, aborts and ends ---
  // OK when `bytes` more fit in the quota, else RESOURCE_EXHAUSTED saying
  // what they were for (reason SHARD_LIMIT).
  absl::Status CheckQuotaLocked(int64_t bytes, absl::string_view what) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // RESOURCE_EXHAUSTED naming --max_rounds_per_job when round `key` is not
  // in flight and `job` has the most rounds in flight it may.
  absl::Status CheckRoundLimitLocked(const JobState& job, RoundKey key) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  void CountDuplicateLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Returns decode reservation `bytes` taken by Admit.
  void ReleaseReservation(int64_t bytes) ABSL_LOCKS_EXCLUDED(mutex_);
  // Aborts round `key` of `job`: error to every live rank.
  void AbortRoundLocked(JobState& job, RoundKey key, const absl::Status& reason,
                        std::vector<Delivery>* deliveries)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Ends job `job_id` when nothing keeps it (JobCanEnd).
  void MaybeDropJobLocked(const std::string& job_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  void UpdateGaugesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  int64_t ActiveStreamsLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Sends each message; called without the lock.
  static void Deliver(std::vector<Delivery>& deliveries);

  const RegistryOptions options_;
  AggregatorMetrics& metrics_;

  mutable absl::Mutex mutex_;
  std::map<std::string, std::unique_ptr<JobState>> jobs_
      ABSL_GUARDED_BY(mutex_);
  HeldTotals held_ ABSL_GUARDED_BY(mutex_);
  int64_t duplicates_ ABSL_GUARDED_BY(mutex_) = 0;
  bool accepting_joins_ ABSL_GUARDED_BY(mutex_) = true;
  // The generation the next created job gets (MemberId::job_generation).
  uint64_t next_job_generation_ ABSL_GUARDED_BY(mutex_) = 1;
};

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_ROUNDS_JOB_REGISTRY_H_
