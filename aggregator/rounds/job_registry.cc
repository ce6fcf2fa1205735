#include "aggregator/rounds/job_registry.h"

#include <algorithm>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "aggregator/rounds/admission.h"
#include "aggregator/rounds/job_books.h"
#include "aggregator/rounds/join_validation.h"
#include "aggregator/rounds/log_text.h"
#include "aggregator/rounds/merge_round.h"
#include "aggregator/rounds/non_finite_values.h"
#include "aggregator/rounds/round_error.h"
#include "entrograd/common/log.h"
#include "entrograd/codec.h"
#include "entrograd/wire/grpc_status.h"
#include "entrograd/wire/payload_proto.h"

namespace entrograd::aggregator {

namespace {

// Layer names come from the wire: every message names them through LogText
// (escaped, cut), so one RoundError per refused update cannot echo a long
// name back.
std::string RoundName(int64_t step, uint32_t layer, absl::string_view name) {
  return absl::StrCat("round (step ", step, ", layer ", layer, " \"",
                      LogText(name), "\")");
}

int64_t PayloadWireBytes(const v1::SparsePayload& payload) {
  return static_cast<int64_t>(payload.index_bytes().size() +
                              payload.value_bytes().size());
}

void CountDownlink(AggregatorMetrics& metrics,
                   const v1::AggregatorMessage& merged) {
  const v1::SparsePayload& payload = merged.merged_layer().payload();
  metrics.AddDownlink(PayloadWireBytes(payload),
                      static_cast<int64_t>(4 * payload.numel()));
}

}  // namespace

JobRegistry::JobRegistry(RegistryOptions options, AggregatorMetrics* metrics)
    : options_(std::move(options)),
      metrics_(metrics != nullptr ? *metrics : AggregatorMetrics::Null()) {}

JobRegistry::~JobRegistry() = default;

absl::Status JobRegistry::Reject(RejectReason reason, absl::Status status) {
  metrics_.AddReject(reason);
  return status;
}

// --- Join ---

absl::StatusOr<MemberId> JobRegistry::Join(
    const v1::Join& join, const std::optional<std::string>& authorized_job,
    std::shared_ptr<StreamSink> sink) {
  if (absl::Status status = ValidateJoinShape(join, options_); !status.ok()) {
    return Reject(RejectReason::kBadJoin, std::move(status));
  }
  if (authorized_job.has_value() && *authorized_job != join.job_id()) {
    return Reject(
        RejectReason::kPermissionDenied,
        absl::PermissionDeniedError(absl::StrCat(
            "the bearer token does not grant job \"", join.job_id(), "\"")));
  }
  std::shared_ptr<StreamSink> replaced;
  MemberId id;
  {
    absl::MutexLock lock(&mutex_);
    absl::StatusOr<JobState*> found = JobForJoinLocked(join);
    if (!found.ok()) return found.status();
    JobState& job = **found;
    JobState::Member& member = job.members[join.rank()];
    if (member.ever_joined && join.incarnation() < member.incarnation) {
      return Reject(
          RejectReason::kDuplicateStream,
          absl::FailedPreconditionError(absl::StrCat(
              "rank ", join.rank(), " incarnation ", join.incarnation(),
              " is older than the live incarnation ", member.incarnation)));
    }
    if (member.sink != nullptr && join.incarnation() == member.incarnation) {
      return Reject(
          RejectReason::kDuplicateStream,
          absl::AlreadyExistsError(absl::StrCat(
              "rank ", join.rank(), " incarnation ", join.incarnation(),
              " of job \"", job.id, "\" already has a live stream")));
    }
    replaced = std::move(member.sink);
    member.sink = sink;
    member.incarnation = join.incarnation();
    member.ever_joined = true;
    member.applied_step = std::max(member.applied_step, join.applied_step());
    member.accepted_value_type_bits = 0;
    for (int type : join.accepted_value_types()) {
      // Unknown numbers (a newer worker) are not types this shard writes.
      if (v1::ValueType_IsValid(type) && type != v1::VALUE_TYPE_UNSPECIFIED) {
        member.accepted_value_type_bits |= uint32_t{1} << type;
      }
    }
    member.accepts_gap_range =
        absl::c_linear_search(join.accepted_index_encodings(),
                              static_cast<int>(v1::INDEX_ENCODING_GAP_RANGE));
    ReleaseApplied(job, held_);
    ENTROGRAD_LOG(kInfo, "job \"", job.id, "\" rank ", join.rank(),
                  " joined (incarnation ", join.incarnation(),
                  ", applied step ", join.applied_step(),
                  replaced != nullptr ? ", replacing a stream" : "", ")");
    // Queued under the lock: every other message for this sink is chosen
    // under the lock after this point and sent after it, so the ack is
    // always the stream's first message.
    sink->Send(JoinAckFor(job));
    id = MemberId{job.id, join.rank(), join.incarnation(), job.generation};
    UpdateGaugesLocked();
  }
  if (replaced != nullptr) {
    replaced->Close(WithStreamEndReason(
        absl::AbortedError(absl::StrCat("rank ", join.rank(),
                                        " was replaced by incarnation ",
                                        join.incarnation())),
        v1::STREAM_END_REASON_RANK_REPLACED));
  }
  return id;
}

absl::StatusOr<JobState*> JobRegistry::JobForJoinLocked(const v1::Join& join) {
  if (!accepting_joins_) {
    return absl::UnavailableError("the aggregator is draining");
  }
  auto it = jobs_.find(join.job_id());
  if (it == jobs_.end() &&
      static_cast<int>(jobs_.size()) >= options_.max_jobs) {
    return Reject(RejectReason::kQuota,
                  absl::ResourceExhaustedError(absl::StrCat(
                      "this aggregator already serves ", jobs_.size(),
                      " jobs (the --max_jobs limit)")));
  }
  if (it != jobs_.end()) {
    if (absl::Status status = CompareJoinWithJob(*it->second, join);
        !status.ok()) {
      return Reject(RejectReason::kJoinMismatch, std::move(status));
    }
  } else if (absl::Status status = CheckQuotaLocked(
                 JobTableBytes(join), "for the new job's layer table");
             !status.ok()) {
    return Reject(RejectReason::kQuota, std::move(status));
  }
  // Checked before the job exists, so a refused Join creates nothing.
  if (absl::Status status =
          CheckIncarnationLead(join, options_.max_incarnation_lead);
      !status.ok()) {
    return Reject(RejectReason::kBadJoin, std::move(status));
  }
  return it != jobs_.end() ? it->second.get() : &CreateJobLocked(join);
}

JobState& JobRegistry::CreateJobLocked(const v1::Join& join) {
  auto job = std::make_unique<JobState>();
  job->id = join.job_id();
  job->generation = next_job_generation_++;
  job->world_size = join.world_size();
  job->layers.assign(join.layers().begin(), join.layers().end());
  job->params_hash = join.initial_params_hash();
  job->members.resize(join.world_size());
  job->table_bytes = JobTableBytes(join);
  held_.bytes += job->table_bytes;
  ENTROGRAD_LOG(kInfo, "job \"", join.job_id(), "\" created: world size ",
                join.world_size(), ", ", join.layers_size(), " layers");
  return *jobs_.emplace(join.job_id(), std::move(job)).first->second;
}

std::shared_ptr<const v1::AggregatorMessage> JobRegistry::JoinAckFor(
    const JobState& job) const {
  auto message = std::make_shared<v1::AggregatorMessage>();
  v1::JoinAck* ack = message->mutable_join_ack();
  ack->set_merged_step(job.MinAppliedStep());
  ack->set_shard_name(options_.shard_name);
  ack->set_max_message_bytes(options_.max_message_bytes);
  ack->set_max_steps_ahead(options_.max_steps_ahead);
  return message;
}

JobState* JobRegistry::FindJobOfLocked(const MemberId& member) {
  auto it = jobs_.find(member.job_id);
  if (it == jobs_.end()) return nullptr;
  JobState& job = *it->second;
  if (job.generation != member.job_generation ||
      member.rank >= job.members.size()) {
    return nullptr;
  }
  return &job;
}

// --- Contribute ---

absl::Status JobRegistry::Contribute(const MemberId& member,
                                     const v1::LayerUpdate& update) {
  if (absl::Status status = ValidateUpdateSteps(update); !status.ok()) {
    return Reject(RejectReason::kBadPayload, std::move(status));
  }
  if (absl::Status status = ValidateMergedKeepFactor(update); !status.ok()) {
    return Reject(RejectReason::kBadPayload, std::move(status));
  }
  std::vector<Delivery> deliveries;
  absl::StatusOr<std::optional<NewContribution>> admitted =
      Admit(member, update, &deliveries);
  if (!admitted.ok()) return admitted.status();
  if (!admitted->has_value()) {  // a duplicate or a resend
    Deliver(deliveries);
    return absl::OkStatus();
  }
  const NewContribution& contribution = **admitted;

  // Decoded outside the lock: it is the expensive part of a contribution.
  absl::StatusOr<DecodedPayload> decoded =
      DecodePayload(PayloadViewOfProto(update.payload()));
  // Told apart by the value bytes, not by the decoder's wording: a
  // non-finite value aborts the round for every rank (in Accept), anything
  // else malformed is refused for its sender only.
  if (!decoded.ok() && !HoldsNonFiniteValue(update.payload())) {
    ReleaseReservation(contribution.reserved_bytes);
    return Reject(RejectReason::kBadPayload,
                  absl::InvalidArgumentError(absl::StrCat(
                      "layer_update for ",
                      RoundName(update.step(), update.layer_index(),
                                contribution.layer_name),
                      ": ", decoded.status().message())));
  }

  std::optional<CompleteRound> complete;
  absl::Status outcome =
      Accept(member, update, contribution, decoded, &complete, &deliveries);
  Deliver(deliveries);
  if (complete.has_value()) {
    FinishRound(member.job_id, RoundKey(update.step(), update.layer_index()),
                *std::move(complete));
  }
  return outcome;
}

absl::StatusOr<std::optional<JobRegistry::NewContribution>> JobRegistry::Admit(
    const MemberId& member, const v1::LayerUpdate& update,
    std::vector<Delivery>* deliveries) {
  absl::MutexLock lock(&mutex_);
  JobState* found = FindJobOfLocked(member);
  if (found == nullptr ||
      found->members[member.rank].incarnation != member.incarnation ||
      found->members[member.rank].sink == nullptr) {
    return Reject(RejectReason::kBeforeJoin,
                  absl::FailedPreconditionError(
                      "layer_update from a stream that is no longer joined (it "
                      "was replaced, or its job ended)"));
  }
  JobState& job = *found;
  JobState::Member& self = job.members[member.rank];
  if (update.applied_step() > self.applied_step) {
    self.applied_step = update.applied_step();
    ReleaseApplied(job, held_);
  }
  Admission admission =
      AdmitUpdate(job, member.rank, update, options_.max_steps_ahead);
  switch (admission.kind) {
    case AdmissionKind::kRefused:
      if (admission.reject_reason.has_value()) {
        metrics_.AddReject(*admission.reject_reason);
      }
      return admission.status;
    case AdmissionKind::kResend:
      CountDownlink(metrics_, *admission.merged);
      deliveries->push_back({self.sink, std::move(admission.merged)});
      CountDuplicateLocked();
      return std::nullopt;
    case AdmissionKind::kDuplicate:
      CountDuplicateLocked();
      return std::nullopt;
    case AdmissionKind::kNew:
      break;
  }
  // Decoding allocates: count it before decoding.
  const RoundKey key(update.step(), update.layer_index());
  if (absl::Status status = CheckRoundLimitLocked(job, key); !status.ok()) {
    return Reject(RejectReason::kQuota, std::move(status));
  }
  NewContribution contribution;
  contribution.numel = job.layers[update.layer_index()].numel();
  contribution.layer_name = job.layers[update.layer_index()].name();
  contribution.reserved_bytes =
      DecodedBytesBound(update.payload(), contribution.numel);
  if (absl::Status status = CheckQuotaLocked(contribution.reserved_bytes,
                                             "to decode this contribution");
      !status.ok()) {
    return Reject(RejectReason::kQuota, std::move(status));
  }
  held_.bytes += contribution.reserved_bytes;
  return contribution;
}

absl::Status JobRegistry::Accept(const MemberId& member,
                                 const v1::LayerUpdate& update,
                                 const NewContribution& contribution,
                                 absl::StatusOr<DecodedPayload>& decoded,
                                 std::optional<CompleteRound>* complete,
                                 std::vector<Delivery>* deliveries) {
  absl::MutexLock lock(&mutex_);
  // Replaced below by what is actually kept.
  held_.bytes -= contribution.reserved_bytes;
  absl::Status outcome =
      AcceptLocked(member, update, contribution, decoded, complete, deliveries);
  UpdateGaugesLocked();
  return outcome;
}

absl::Status JobRegistry::AcceptLocked(const MemberId& member,
                                       const v1::LayerUpdate& update,
                                       const NewContribution& contribution,
                                       absl::StatusOr<DecodedPayload>& decoded,
                                       std::optional<CompleteRound>* complete,
                                       std::vector<Delivery>* deliveries) {
  JobState* found = FindJobOfLocked(member);
  if (found == nullptr ||
      found->members[member.rank].incarnation != member.incarnation) {
    return absl::FailedPreconditionError(
        "the stream was replaced or its job ended while its update was "
        "decoded");
  }
  JobState& job = *found;
  const RoundKey key(update.step(), update.layer_index());
  // Another rank's update may have ended the round meanwhile.
  if (auto aborted = job.aborted.find(key); aborted != job.aborted.end()) {
    return aborted->second;
  }
  if (job.completed.count(key) != 0) {
    CountDuplicateLocked();
    return absl::OkStatus();
  }
  if (!decoded.ok()) {
    return RejectNonFiniteLocked(job, member.rank, update,
                                 contribution.layer_name, decoded.status(),
                                 deliveries);
  }
  auto existing = job.rounds.find(key);
  const bool new_round = existing == job.rounds.end();
  if (!new_round && existing->second->by_rank[member.rank].has_value()) {
    CountDuplicateLocked();
    return absl::OkStatus();
  }
  if (new_round) {
    if (absl::Status status = CheckRoundLimitLocked(job, key); !status.ok()) {
      return Reject(RejectReason::kQuota, std::move(status));
    }
  }
  // Everything accepting this contribution allocates, before allocating it:
  // the round's slots when it is new, the decoded payload, and the merge
  // when this contribution completes the round.
  const int64_t decoded_bytes = DecodedBytes(*decoded);
  const int64_t overhead = new_round ? RoundOverheadBytes(job.world_size) : 0;
  const int contributed = new_round ? 0 : existing->second->contributed;
  const uint64_t entries =
      (new_round ? 0 : existing->second->entries) + EntriesOf(*decoded);
  const bool completes = contributed + 1 == static_cast<int>(job.world_size);
  const int64_t merge =
      completes ? MergeBytesBound(contribution.numel, entries) : 0;
  if (absl::Status status = CheckQuotaLocked(
          decoded_bytes + overhead + merge,
          completes ? "for this contribution and the merge it completes"
                    : "for this contribution");
      !status.ok()) {
    return Reject(RejectReason::kQuota, std::move(status));
  }
  std::unique_ptr<RoundState>& round = job.rounds[key];
  if (new_round) {
    round = std::make_unique<RoundState>();
    round->started = absl::Now();
    round->deadline = round->started + options_.round_timeout;
    round->by_rank.resize(job.world_size);
    round->bytes = overhead;
    held_.bytes += overhead;
    ++held_.rounds_in_flight;
  }
  round->by_rank[member.rank] = *std::move(decoded);
  round->keep_factor.Add(update.merged_keep_factor());
  ++round->contributed;
  round->entries = entries;
  round->bytes += decoded_bytes;
  held_.bytes += decoded_bytes;
  metrics_.AddUplink(PayloadWireBytes(update.payload()),
                     static_cast<int64_t>(4 * contribution.numel));
  if (completes) {
    *complete = CompleteRound{std::move(round), merge,
                              job.ValueTypesEveryMemberAccepts(),
                              job.EveryMemberAcceptsGapRange()};
    job.rounds.erase(key);
    --held_.rounds_in_flight;
    held_.bytes += merge;
    job.completed[key];  // placeholder: duplicates wait for the merge
  }
  return absl::OkStatus();
}

absl::Status JobRegistry::RejectNonFiniteLocked(
    JobState& job, uint32_t rank, const v1::LayerUpdate& update,
    const std::string& layer_name, const absl::Status& decode_error,
    std::vector<Delivery>* deliveries) {
  metrics_.AddReject(RejectReason::kNonFinite);
  const absl::Status rejected = WithRoundErrorReason(
      absl::AbortedError(absl::StrCat(
          RoundName(update.step(), update.layer_index(), layer_name),
          " rejected: rank ", rank, " sent a non-finite value (",
          decode_error.message(), ")")),
      v1::ROUND_ERROR_REASON_NON_FINITE);
  AbortRoundLocked(job, RoundKey(update.step(), update.layer_index()), rejected,
                   deliveries);
  // The sender learns it from the returned status instead.
  const StreamSink* sender = job.members[rank].sink.get();
  deliveries->erase(std::remove_if(deliveries->begin(), deliveries->end(),
                                   [sender](const Delivery& d) {
                                     return d.sink.get() == sender;
                                   }),
                    deliveries->end());
  metrics_.RoundFinished(RoundOutcome::kRejected, 0.0);
  return rejected;
}

void JobRegistry::FinishRound(const std::string& job_id, RoundKey key,
                              CompleteRound complete) {
  const RoundState& round = *complete.round;
  const absl::Time merge_start = absl::Now();
  absl::StatusOr<std::shared_ptr<const v1::AggregatorMessage>> message =
      MergeRound(key.first, key.second, round.by_rank,
                 options_.max_message_bytes, complete.downlink_value_types,
                 round.keep_factor.factor(), complete.downlink_gap_range);
  const absl::Time merge_end = absl::Now();

  std::vector<Delivery> deliveries;
  {
    absl::MutexLock lock(&mutex_);
    held_.bytes -= round.bytes + complete.merge_reserved_bytes;
    auto it = jobs_.find(job_id);
    if (it != jobs_.end()) {
      JobState& job = *it->second;
      if (message.ok()) {
        PublishMergedLocked(job, key, *std::move(message), &deliveries);
        metrics_.ObserveMerge(absl::ToDoubleSeconds(merge_end - merge_start));
        metrics_.RoundFinished(
            RoundOutcome::kCompleted,
            absl::ToDoubleSeconds(absl::Now() - round.started));
        ReleaseApplied(job, held_);
      } else {
        job.completed.erase(key);
        AbortRoundLocked(
            job, key,
            WithRoundErrorReason(
                absl::Status(
                    message.status().code(),
                    absl::StrCat(RoundName(key.first, key.second,
                                           job.layers[key.second].name()),
                                 " rejected: ", message.status().message())),
                RoundErrorReasonOf(message.status())),
            &deliveries);
        metrics_.RoundFinished(RoundOutcome::kRejected, 0.0);
      }
      // Its last stream may have left during the merge, which kept it.
      MaybeDropJobLocked(job_id);
    }
    UpdateGaugesLocked();
  }
  Deliver(deliveries);
}

void JobRegistry::PublishMergedLocked(
    JobState& job, RoundKey key,
    std::shared_ptr<const v1::AggregatorMessage> message,
    std::vector<Delivery>* deliveries) {
  JobState::Completed& done = job.completed[key];
  done.bytes = CompletedRecordBytes(*message);
  held_.bytes += done.bytes;
  for (const JobState::Member& member : job.members) {
    // A rank that already applied this step (it got the update from a
    // previous incarnation of this shard) must not get it twice.
    if (member.sink == nullptr || member.applied_step >= key.first) continue;
    deliveries->push_back({member.sink, message});
    CountDownlink(metrics_, *message);
  }
  done.message = std::move(message);
}

// --- Limits, aborts and ends ---

absl::Status JobRegistry::CheckQuotaLocked(int64_t bytes,
                                           absl::string_view what) const {
  if (held_.bytes + bytes <= options_.memory_quota_bytes) {
    return absl::OkStatus();
  }
  return WithRoundErrorReason(
      absl::ResourceExhaustedError(
          absl::StrCat("memory quota reached: ", held_.bytes, " bytes held + ",
                       bytes, " bytes ", what, " > --memory_quota_bytes = ",
                       options_.memory_quota_bytes, "; retry later")),
      v1::ROUND_ERROR_REASON_SHARD_LIMIT);
}

absl::Status JobRegistry::CheckRoundLimitLocked(const JobState& job,
                                                RoundKey key) const {
  if (job.rounds.count(key) != 0 ||
      static_cast<int64_t>(job.rounds.size()) < options_.max_rounds_per_job) {
    return absl::OkStatus();
  }
  return WithRoundErrorReason(
      absl::ResourceExhaustedError(absl::StrCat(
          "job \"", job.id, "\" already has ", job.rounds.size(),
          " rounds in flight (the --max_rounds_per_job limit); retry after "
          "some complete")),
      v1::ROUND_ERROR_REASON_SHARD_LIMIT);
}

void JobRegistry::CountDuplicateLocked() {
  ++duplicates_;
  metrics_.AddDuplicate();
}

void JobRegistry::ReleaseReservation(int64_t bytes) {
  if (bytes == 0) return;
  absl::MutexLock lock(&mutex_);
  held_.bytes -= bytes;
  UpdateGaugesLocked();
}

void JobRegistry::AbortRoundLocked(JobState& job, RoundKey key,
                                   const absl::Status& reason,
                                   std::vector<Delivery>* deliveries) {
  EraseRound(job, key, held_);
  RecordAbort(job, key, reason, options_.max_rounds_per_job, held_);
  ENTROGRAD_LOG(kWarning, "job \"", job.id, "\": ", reason.message());
  auto message = MakeRoundError(key.first, key.second, reason);
  for (const JobState::Member& member : job.members) {
    if (member.sink != nullptr) deliveries->push_back({member.sink, message});
  }
}

// --- Leave, timeouts, drain ---

void JobRegistry::Leave(const MemberId& member, const StreamSink* sink) {
  absl::MutexLock lock(&mutex_);
  // A stale id (its job ended and may have been created again) has nothing
  // left to leave.
  JobState* job = FindJobOfLocked(member);
  if (job == nullptr) return;
  JobState::Member& self = job->members[member.rank];
  if (self.sink.get() == sink) {
    self.sink = nullptr;
    ENTROGRAD_LOG(kInfo, "job \"", member.job_id, "\" rank ", member.rank,
                  " left");
  }
  // With no stream left, no round can complete and nobody would hear of its
  // abort; every rank resends what it keeps when it joins again. Keeping
  // them would only keep the job (and its memory) until the round timeout.
  if (!job->HasLiveStream()) DropRounds(*job, held_);
  MaybeDropJobLocked(member.job_id);
  UpdateGaugesLocked();
}

void JobRegistry::MaybeDropJobLocked(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  if (!JobCanEnd(*it->second)) return;
  ReleaseJob(*it->second, held_);
  ENTROGRAD_LOG(kInfo, "job \"", job_id, "\" ended (no streams, no rounds)");
  jobs_.erase(it);
}

int JobRegistry::AbortExpiredRounds(absl::Time now) {
  std::vector<Delivery> deliveries;
  int aborted = 0;
  {
    absl::MutexLock lock(&mutex_);
    std::vector<std::string> emptied;
    for (auto& [job_id, job] : jobs_) {
      std::vector<RoundKey> expired;
      for (const auto& [key, round] : job->rounds) {
        if (round->deadline <= now) expired.push_back(key);
      }
      for (const RoundKey& key : expired) {
        const RoundState& round = *job->rounds[key];
        std::vector<uint32_t> missing;
        for (uint32_t rank = 0; rank < round.by_rank.size(); ++rank) {
          if (!round.by_rank[rank].has_value()) missing.push_back(rank);
        }
        const double waited = absl::ToDoubleSeconds(now - round.started);
        const std::string reason = absl::StrCat(
            RoundName(key.first, key.second, job->layers[key.second].name()),
            " of job \"", job_id, "\" aborted after ",
            absl::ToDoubleSeconds(options_.round_timeout),
            " s (the round timeout): no contribution from rank(s) ",
            absl::StrJoin(missing, ", "));
        AbortRoundLocked(
            *job, key,
            WithRoundErrorReason(absl::AbortedError(reason),
                                 v1::ROUND_ERROR_REASON_ROUND_TIMEOUT),
            &deliveries);
        metrics_.RoundFinished(RoundOutcome::kAborted, waited);
        ++aborted;
      }
      if (!expired.empty()) emptied.push_back(job_id);
    }
    for (const std::string& job_id : emptied) MaybeDropJobLocked(job_id);
    UpdateGaugesLocked();
  }
  Deliver(deliveries);
  return aborted;
}

void JobRegistry::StopAcceptingJoins() {
  absl::MutexLock lock(&mutex_);
  accepting_joins_ = false;
}

void JobRegistry::AbortAllRounds(absl::string_view reason) {
  std::vector<Delivery> deliveries;
  {
    absl::MutexLock lock(&mutex_);
    for (auto& [job_id, job] : jobs_) {
      std::vector<RoundKey> keys;
      for (const auto& [key, round] : job->rounds) keys.push_back(key);
      for (const RoundKey& key : keys) {
        AbortRoundLocked(*job, key,
                         WithRoundErrorReason(absl::AbortedError(reason),
                                              v1::ROUND_ERROR_REASON_SHUTDOWN),
                         &deliveries);
        metrics_.RoundFinished(RoundOutcome::kAborted, 0.0);
      }
    }
    UpdateGaugesLocked();
  }
  Deliver(deliveries);
}

// --- Gauges and queries ---

void JobRegistry::UpdateGaugesLocked() {
  metrics_.SetActiveStreams(ActiveStreamsLocked());
  metrics_.SetRoundsInFlight(held_.rounds_in_flight);
  metrics_.SetBytesHeld(held_.bytes);
}

int64_t JobRegistry::ActiveStreamsLocked() const {
  int64_t streams = 0;
  for (const auto& [job_id, job] : jobs_) {
    for (const JobState::Member& member : job->members) {
      streams += member.sink != nullptr;
    }
  }
  return streams;
}

void JobRegistry::Deliver(std::vector<Delivery>& deliveries) {
  for (Delivery& delivery : deliveries) {
    delivery.sink->Send(std::move(delivery.message));
  }
}

int64_t JobRegistry::ActiveStreams() const {
  absl::MutexLock lock(&mutex_);
  return ActiveStreamsLocked();
}

int64_t JobRegistry::RoundsInFlight() const {
  absl::MutexLock lock(&mutex_);
  return held_.rounds_in_flight;
}

int64_t JobRegistry::BytesHeld() const {
  absl::MutexLock lock(&mutex_);
  return held_.bytes;
}

int JobRegistry::JobCount() const {
  absl::MutexLock lock(&mutex_);
  return static_cast<int>(jobs_.size());
}

int64_t JobRegistry::Duplicates() const {
  absl::MutexLock lock(&mutex_);
  return duplicates_;
}

}  // namespace entrograd::aggregator
