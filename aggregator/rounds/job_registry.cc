#include "aggregator/rounds/job_registry.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "aggregator/merge/sparse_merge.h"
#include "aggregator/rounds/log_text.h"
#include "aggregator/rounds/non_finite_values.h"
#include "aggregator/rounds/round_error.h"
#include "entrograd/common/log.h"
#include "entrograd/codec.h"
#include "entrograd/wire/job_id.h"
#include "entrograd/wire/payload_proto.h"

namespace entrograd::aggregator {

namespace {

using RoundKey = std::pair<int64_t, uint32_t>;  // (step, layer)

// Layer names come from the wire: every message names them through LogText
// (escaped, cut), so one RoundError per refused update cannot echo a long
// name back.
std::string RoundName(int64_t step, uint32_t layer, absl::string_view name) {
  return absl::StrCat("round (step ", step, ", layer ", layer, " \"",
                      LogText(name), "\")");
}

// A map node and the bookkeeping beside each kept record, approximately.
constexpr int64_t kRecordOverheadBytes = 64;
// At least sizeof(Round) and sizeof(Job::Member) (checked in the
// constructor, which may name them).
constexpr int64_t kRoundFixedBytes = 128;
constexpr int64_t kMemberBytes = 48;

int64_t DecodedBytes(const DecodedPayload& payload) {
  return static_cast<int64_t>(payload.indices.size() * sizeof(uint32_t) +
                              payload.values.size() * sizeof(float));
}

// What DecodePayload may allocate for `payload` of a `numel`-element layer,
// known before decoding: numel values when dense, else count indices and
// values (a count above numel is refused by the decoder before it
// allocates).
int64_t DecodedBytesBound(const v1::SparsePayload& payload, uint64_t numel) {
  if (payload.index_encoding() == v1::INDEX_ENCODING_DENSE) {
    return static_cast<int64_t>(numel * sizeof(float));
  }
  const uint64_t count = std::min<uint64_t>(payload.count(), numel);
  return static_cast<int64_t>(count * (sizeof(uint32_t) + sizeof(float)));
}

// Entries a decoded contribution adds to its round's merge.
uint64_t EntriesOf(const DecodedPayload& payload) {
  return payload.dense ? payload.numel : payload.indices.size();
}

int64_t AbortRecordBytes(const absl::Status& reason) {
  return kRecordOverheadBytes + static_cast<int64_t>(sizeof(absl::Status) +
                                                     reason.message().size());
}

// A Join's incarnation beyond this is refused (RegistryOptions::
// max_incarnation_lead): the shard's clock in microseconds plus the lead.
uint64_t IncarnationLimit(absl::Duration lead) {
  const int64_t now_us = absl::ToUnixMicros(absl::Now());
  const int64_t lead_us = absl::ToInt64Microseconds(lead);
  return static_cast<uint64_t>(std::max<int64_t>(now_us, 0)) +
         static_cast<uint64_t>(std::max<int64_t>(lead_us, 0));
}

absl::Status ValidateLayerName(int index, absl::string_view name) {
  const auto printable = [](char c) {
    return static_cast<unsigned char>(c) >= 0x20 &&
           static_cast<unsigned char>(c) <= 0x7e;
  };
  if (name.empty() || name.size() > kMaxLayerNameBytes ||
      !std::all_of(name.begin(), name.end(), printable)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "join.layers[", index, "].name \"", LogText(name), "\" (", name.size(),
        " bytes) is invalid; expected 1 to ", kMaxLayerNameBytes,
        " printable ASCII bytes (0x20-0x7e)"));
  }
  return absl::OkStatus();
}

// The step fields of an update, checked before any state changes. With
// 0 <= step <= kMaxStep and -1 <= applied_step < step, no step-window sum
// can overflow.
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

int64_t PayloadWireBytes(const v1::SparsePayload& payload) {
  return static_cast<int64_t>(payload.index_bytes().size() +
                              payload.value_bytes().size());
}

// Merges a complete round in rank order and encodes it as a MergedLayer.
// Errors: ABORTED when the merge or encoding fails; RESOURCE_EXHAUSTED when
// the message would be larger than `max_message_bytes` (gRPC would refuse
// to write it and break every rank's stream instead).
absl::StatusOr<std::shared_ptr<const v1::AggregatorMessage>> MergeRound(
    int64_t step, uint32_t layer,
    const std::vector<std::optional<DecodedPayload>>& by_rank,
    uint64_t max_message_bytes) {
  const int world_size = static_cast<int>(by_rank.size());
  std::vector<RankContribution> contributions;
  contributions.reserve(world_size);
  uint64_t numel = 0;
  for (const std::optional<DecodedPayload>& payload : by_rank) {
    numel = payload->numel;
    contributions.push_back(
        payload->dense
            ? RankContribution::Dense(payload->values)
            : RankContribution::Sparse(payload->indices, payload->values));
  }
  // One merger per thread: its scratch (numel-sized) is reused across rounds.
  thread_local SparseMerger merger;
  MergedUpdate merged;
  absl::Status status = merger.Merge(numel, world_size, contributions, &merged);
  absl::StatusOr<EncodedPayload> encoded =
      status.ok() ? EncodeSparse(numel, merged.indices, merged.values)
                  : absl::StatusOr<EncodedPayload>(status);
  if (!encoded.ok()) return absl::AbortedError(encoded.status().message());
  auto message = std::make_shared<v1::AggregatorMessage>();
  v1::MergedLayer* merged_layer = message->mutable_merged_layer();
  merged_layer->set_step(step);
  merged_layer->set_layer_index(layer);
  merged_layer->set_contributors(world_size);
  PayloadToProto(*encoded, merged_layer->mutable_payload());
  const uint64_t message_bytes = message->ByteSizeLong();
  if (message_bytes > max_message_bytes) {
    return WithRoundErrorReason(
        absl::ResourceExhaustedError(absl::StrCat(
            "the merged update is ", message_bytes,
            " bytes, more than max_message_bytes = ", max_message_bytes,
            " (the ranks together keep too many entries)")),
        v1::ROUND_ERROR_REASON_MERGED_TOO_LARGE);
  }
  return message;
}

}  // namespace

struct JobRegistry::Round {
  absl::Time started;
  absl::Time deadline;
  std::vector<std::optional<DecodedPayload>> by_rank;
  int contributed = 0;
  // Counted against the quota: RoundOverheadBytes plus the decoded
  // contributions.
  int64_t bytes = 0;
  // Entries of the decoded contributions, for MergeBytesBound.
  uint64_t entries = 0;
};

struct JobRegistry::Job {
  struct Member {
    uint64_t incarnation = 0;
    bool ever_joined = false;
    std::shared_ptr<StreamSink> sink;  // null while disconnected
    int64_t applied_step = -1;
  };
  // A complete round's merged update, kept until every rank applied it.
  struct Completed {
    std::shared_ptr<const v1::AggregatorMessage> message;  // null: merging
    int64_t bytes = 0;
  };

  std::string id;
  uint64_t generation = 0;  // MemberId::job_generation
  uint32_t world_size = 0;
  std::vector<v1::LayerInfo> layers;
  uint64_t params_hash = 0;
  std::vector<Member> members;
  std::map<RoundKey, std::unique_ptr<Round>> rounds;
  std::map<RoundKey, Completed> completed;
  std::map<RoundKey, absl::Status> aborted;  // why, kept like completed
  // Counted against the quota: JobTableBytes, and the aborted records.
  int64_t table_bytes = 0;
  int64_t aborted_bytes = 0;

  // Every rank applied every layer of steps <= this.
  int64_t MinAppliedStep() const {
    int64_t min_applied = members.empty() ? -1 : members[0].applied_step;
    for (const Member& member : members) {
      min_applied = std::min(min_applied, member.applied_step);
    }
    return min_applied;
  }
  // The slowest rank among those that joined since the shard started.
  int64_t MinJoinedAppliedStep() const {
    int64_t min_applied = INT64_MAX;
    for (const Member& member : members) {
      if (member.ever_joined) {
        min_applied = std::min(min_applied, member.applied_step);
      }
    }
    return min_applied == INT64_MAX ? -1 : min_applied;
  }
  bool HasLiveStream() const {
    for (const Member& member : members) {
      if (member.sink != nullptr) return true;
    }
    return false;
  }
};

int64_t RoundOverheadBytes(uint32_t world_size) {
  return kRecordOverheadBytes + kRoundFixedBytes +
         static_cast<int64_t>(world_size) *
             static_cast<int64_t>(sizeof(std::optional<DecodedPayload>));
}

int64_t MergeBytesBound(uint64_t numel, uint64_t entries) {
  const uint64_t merged = std::min(numel, entries);
  // The merged indices and values; the encoding picks the smallest layout,
  // never larger than raw indices and values nor than a bitmap plus dense
  // values; PayloadToProto copies it into the message.
  const uint64_t merged_bytes = merged * (sizeof(uint32_t) + sizeof(float));
  const uint64_t encoded = std::min(merged_bytes, numel * sizeof(float) +
                                                      numel / 8 + 64);
  return static_cast<int64_t>(merged_bytes + 2 * encoded);
}

int64_t JobTableBytes(const v1::Join& join) {
  int64_t bytes = kRecordOverheadBytes + 512;  // the job record itself
  for (const v1::LayerInfo& layer : join.layers()) {
    bytes += static_cast<int64_t>(sizeof(v1::LayerInfo) + layer.name().size());
  }
  // A Member is an incarnation, a flag, a sink pointer and an applied step.
  bytes += static_cast<int64_t>(join.world_size()) * kMemberBytes;
  return bytes;
}

JobRegistry::JobRegistry(RegistryOptions options, AggregatorMetrics* metrics)
    : options_(std::move(options)), metrics_(metrics) {
  static_assert(sizeof(Round) <= kRoundFixedBytes);
  static_assert(sizeof(Job::Member) <= kMemberBytes);
}

JobRegistry::~JobRegistry() = default;

absl::Status JobRegistry::ValidateJoinShape(const v1::Join& join) const {
  if (!IsValidJobId(join.job_id())) {
    return absl::InvalidArgumentError(
        absl::StrCat("join.job_id \"", LogText(join.job_id()),
                     "\" is invalid; expected 1 to 128 of [A-Za-z0-9._-]"));
  }
  if (join.world_size() < 1 || join.world_size() > options_.max_world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("join.world_size = ", join.world_size(),
                     " is out of range [1, ", options_.max_world_size, "]"));
  }
  if (join.rank() >= join.world_size()) {
    return absl::InvalidArgumentError(absl::StrCat("join.rank = ", join.rank(),
                                                   " is not below world_size ",
                                                   join.world_size()));
  }
  if (join.applied_step() < -1 || join.applied_step() >= kMaxStep) {
    return absl::InvalidArgumentError(
        absl::StrCat("join.applied_step = ", join.applied_step(),
                     " is out of range [-1, ", kMaxStep, ")"));
  }
  if (join.layers_size() < 1 || join.layers_size() > options_.max_layers) {
    return absl::InvalidArgumentError(
        absl::StrCat("join.layers has ", join.layers_size(),
                     " entries; expected 1 to ", options_.max_layers));
  }
  for (int l = 0; l < join.layers_size(); ++l) {
    if (absl::Status status = ValidateLayerName(l, join.layers(l).name());
        !status.ok()) {
      return status;
    }
    const uint64_t numel = join.layers(l).numel();
    if (numel < 1 || numel > kMaxPayloadNumel) {
      return absl::InvalidArgumentError(absl::StrCat(
          "join.layers[", l, "] (\"", LogText(join.layers(l).name()),
          "\") has numel ", numel, "; expected 1 to ", kMaxPayloadNumel));
    }
  }
  return absl::OkStatus();
}

absl::Status JobRegistry::CompareWithJob(const Job& job,
                                         const v1::Join& join) const {
  const std::string prefix = absl::StrCat(
      "rank ", join.rank(), " does not match job \"", job.id, "\": ");
  if (join.world_size() != job.world_size) {
    return absl::FailedPreconditionError(absl::StrCat(
        prefix, "world_size ", join.world_size(), " vs ", job.world_size));
  }
  if (static_cast<size_t>(join.layers_size()) != job.layers.size()) {
    return absl::FailedPreconditionError(
        absl::StrCat(prefix, "layer table has ", join.layers_size(),
                     " layers vs ", job.layers.size()));
  }
  for (int l = 0; l < join.layers_size(); ++l) {
    const v1::LayerInfo& mine = join.layers(l);
    const v1::LayerInfo& theirs = job.layers[l];
    if (mine.name() != theirs.name() || mine.numel() != theirs.numel()) {
      return absl::FailedPreconditionError(
          absl::StrCat(prefix, "layer ", l, " is \"", LogText(mine.name()),
                       "\" with ", mine.numel(), " elements vs \"",
                       LogText(theirs.name()), "\" with ", theirs.numel()));
    }
  }
  if (join.initial_params_hash() != job.params_hash) {
    return absl::FailedPreconditionError(
        absl::StrCat(prefix, "initial parameter hash ",
                     absl::Hex(join.initial_params_hash(), absl::kZeroPad16),
                     " vs ", absl::Hex(job.params_hash, absl::kZeroPad16),
                     " (replicas did not start from the same weights)"));
  }
  return absl::OkStatus();
}

JobRegistry::Job* JobRegistry::FindJobOfLocked(const MemberId& member) {
  auto it = jobs_.find(member.job_id);
  if (it == jobs_.end()) return nullptr;
  Job& job = *it->second;
  if (job.generation != member.job_generation ||
      member.rank >= job.members.size()) {
    return nullptr;
  }
  return &job;
}

JobRegistry::Job& JobRegistry::CreateJobLocked(const v1::Join& join) {
  auto job = std::make_unique<Job>();
  job->id = join.job_id();
  job->generation = next_job_generation_++;
  job->world_size = join.world_size();
  job->layers.assign(join.layers().begin(), join.layers().end());
  job->params_hash = join.initial_params_hash();
  job->members.resize(join.world_size());
  job->table_bytes = JobTableBytes(join);
  bytes_held_ += job->table_bytes;
  ENTROGRAD_LOG(kInfo, "job \"", join.job_id(), "\" created: world size ",
                join.world_size(), ", ", join.layers_size(), " layers");
  return *jobs_.emplace(join.job_id(), std::move(job)).first->second;
}

std::shared_ptr<const v1::AggregatorMessage> JobRegistry::JoinAckFor(
    const Job& job) const {
  auto message = std::make_shared<v1::AggregatorMessage>();
  v1::JoinAck* ack = message->mutable_join_ack();
  ack->set_merged_step(job.MinAppliedStep());
  ack->set_shard_name(options_.shard_name);
  ack->set_max_message_bytes(options_.max_message_bytes);
  ack->set_max_steps_ahead(options_.max_steps_ahead);
  return message;
}

absl::StatusOr<MemberId> JobRegistry::Join(
    const v1::Join& join, const std::optional<std::string>& authorized_job,
    std::shared_ptr<StreamSink> sink) {
  if (absl::Status status = ValidateJoinShape(join); !status.ok()) {
    if (metrics_) metrics_->AddReject(RejectReason::kBadJoin);
    return status;
  }
  if (authorized_job.has_value() && *authorized_job != join.job_id()) {
    if (metrics_) metrics_->AddReject(RejectReason::kPermissionDenied);
    return absl::PermissionDeniedError(absl::StrCat(
        "the bearer token does not grant job \"", join.job_id(), "\""));
  }
  std::shared_ptr<StreamSink> replaced;
  MemberId id;
  {
    absl::MutexLock lock(&mutex_);
    if (!accepting_joins_) {
      return absl::UnavailableError("the aggregator is draining");
    }
    auto it = jobs_.find(join.job_id());
    if (it == jobs_.end() &&
        static_cast<int>(jobs_.size()) >= options_.max_jobs) {
      if (metrics_) metrics_->AddReject(RejectReason::kQuota);
      return absl::ResourceExhaustedError(
          absl::StrCat("this aggregator already serves ", jobs_.size(),
                       " jobs (the --max_jobs limit)"));
    }
    if (it != jobs_.end()) {
      if (absl::Status status = CompareWithJob(*it->second, join);
          !status.ok()) {
        if (metrics_) metrics_->AddReject(RejectReason::kJoinMismatch);
        return status;
      }
    } else if (absl::Status status = CheckQuotaLocked(
                   JobTableBytes(join), "for the new job's layer table");
               !status.ok()) {
      if (metrics_) metrics_->AddReject(RejectReason::kQuota);
      return status;
    }
    // Checked before the job exists, so a refused Join creates nothing.
    if (const uint64_t limit = IncarnationLimit(options_.max_incarnation_lead);
        join.incarnation() > limit) {
      if (metrics_) metrics_->AddReject(RejectReason::kBadJoin);
      return absl::FailedPreconditionError(absl::StrCat(
          "join.incarnation ", join.incarnation(),
          " is too far ahead of this shard's clock: at most ", limit,
          " (now in microseconds since the Unix epoch + --max_incarnation_lead "
          "of ",
          absl::FormatDuration(options_.max_incarnation_lead),
          "); use the process start time in microseconds"));
    }
    Job& job = it != jobs_.end() ? *it->second : CreateJobLocked(join);
    Job::Member& member = job.members[join.rank()];
    if (member.ever_joined && join.incarnation() < member.incarnation) {
      if (metrics_) metrics_->AddReject(RejectReason::kDuplicateStream);
      return absl::FailedPreconditionError(absl::StrCat(
          "rank ", join.rank(), " incarnation ", join.incarnation(),
          " is older than the live incarnation ", member.incarnation));
    }
    if (member.sink != nullptr && join.incarnation() == member.incarnation) {
      if (metrics_) metrics_->AddReject(RejectReason::kDuplicateStream);
      return absl::AlreadyExistsError(absl::StrCat(
          "rank ", join.rank(), " incarnation ", join.incarnation(),
          " of job \"", job.id, "\" already has a live stream"));
    }
    replaced = std::move(member.sink);
    member.sink = sink;
    member.incarnation = join.incarnation();
    member.ever_joined = true;
    member.applied_step = std::max(member.applied_step, join.applied_step());
    ReleaseAppliedLocked(job);
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
    replaced->Close(absl::AbortedError(
        absl::StrCat("rank ", join.rank(), " was replaced by incarnation ",
                     join.incarnation())));
  }
  return id;
}

absl::Status JobRegistry::Contribute(const MemberId& member,
                                     const v1::LayerUpdate& update) {
  if (absl::Status status = ValidateUpdateSteps(update); !status.ok()) {
    if (metrics_) metrics_->AddReject(RejectReason::kBadPayload);
    return status;
  }
  const RoundKey key(update.step(), update.layer_index());
  std::vector<Delivery> deliveries;
  uint32_t world_size = 0;
  uint64_t numel = 0;
  std::string layer_name;
  int64_t reserved = 0;  // quota taken for decoding, returned after it
  {
    absl::MutexLock lock(&mutex_);
    Job* found = FindJobOfLocked(member);
    if (found == nullptr ||
        found->members[member.rank].incarnation != member.incarnation ||
        found->members[member.rank].sink == nullptr) {
      if (metrics_) metrics_->AddReject(RejectReason::kBeforeJoin);
      return absl::FailedPreconditionError(
          "layer_update from a stream that is no longer joined (it was "
          "replaced, or its job ended)");
    }
    Job& job = *found;
    Job::Member& self = job.members[member.rank];
    if (update.applied_step() > self.applied_step) {
      self.applied_step = update.applied_step();
      ReleaseAppliedLocked(job);
    }
    if (update.layer_index() >= job.layers.size()) {
      if (metrics_) metrics_->AddReject(RejectReason::kUnknownLayer);
      return absl::InvalidArgumentError(absl::StrCat(
          "layer_update.layer_index ", update.layer_index(),
          " is unknown; the layer table has ", job.layers.size(), " layers"));
    }
    layer_name = job.layers[update.layer_index()].name();
    numel = job.layers[update.layer_index()].numel();
    if (update.payload().numel() != numel) {
      if (metrics_) metrics_->AddReject(RejectReason::kNumelMismatch);
      return absl::FailedPreconditionError(absl::StrCat(
          "layer_update.payload.numel ", update.payload().numel(),
          " does not match layer ", update.layer_index(), " (\"",
          LogText(layer_name), "\") of ", numel, " elements"));
    }
    auto done = job.completed.find(key);
    if (done != job.completed.end()) {
      // A resend after a reconnect: answer with the merged update again.
      ++duplicates_;
      if (metrics_) metrics_->AddDuplicate();
      if (done->second.message != nullptr &&
          self.applied_step < update.step()) {
        deliveries.push_back({self.sink, done->second.message});
        if (metrics_) {
          const v1::SparsePayload& payload =
              done->second.message->merged_layer().payload();
          metrics_->AddDownlink(PayloadWireBytes(payload),
                                static_cast<int64_t>(4 * payload.numel()));
        }
      }
    } else if (auto aborted = job.aborted.find(key);
               aborted != job.aborted.end()) {
      return aborted->second;
    } else if (update.step() <= job.MinAppliedStep()) {
      if (metrics_) metrics_->AddReject(RejectReason::kStaleStep);
      return absl::FailedPreconditionError(absl::StrCat(
          "layer_update.step ", update.step(),
          " is already merged and applied by every rank (up to step ",
          job.MinAppliedStep(), ")"));
    } else if (const int64_t limit =
                   job.MinJoinedAppliedStep() + 1 + options_.max_steps_ahead;
               update.step() > limit) {
      if (metrics_) metrics_->AddReject(RejectReason::kTooFarAhead);
      return absl::OutOfRangeError(absl::StrCat(
          "layer_update.step ", update.step(), " is too far ahead (at most ",
          limit, " while the slowest rank applied step ",
          job.MinJoinedAppliedStep(), ")"));
    } else if (auto round = job.rounds.find(key);
               round != job.rounds.end() &&
               round->second->by_rank[member.rank].has_value()) {
      ++duplicates_;
      if (metrics_) metrics_->AddDuplicate();
    } else {
      // A new contribution. Decoding allocates: count it before decoding.
      if (absl::Status status = CheckRoundLimitLocked(job, key); !status.ok()) {
        if (metrics_) metrics_->AddReject(RejectReason::kQuota);
        return status;
      }
      reserved = DecodedBytesBound(update.payload(), numel);
      if (absl::Status status =
              CheckQuotaLocked(reserved, "to decode this contribution");
          !status.ok()) {
        if (metrics_) metrics_->AddReject(RejectReason::kQuota);
        return status;
      }
      bytes_held_ += reserved;
      world_size = job.world_size;
    }
  }
  if (world_size == 0) {  // answered above: duplicate or resend
    Deliver(deliveries);
    return absl::OkStatus();
  }

  // Decode outside the lock: it is the expensive part of a contribution.
  absl::StatusOr<DecodedPayload> decoded =
      DecodePayload(PayloadViewOfProto(update.payload()));
  // Told apart by the value bytes, not by the decoder's wording: a
  // non-finite value aborts the round for every rank, anything else
  // malformed is refused for its sender only.
  const bool non_finite =
      !decoded.ok() && HoldsNonFiniteValue(update.payload());
  if (!decoded.ok() && !non_finite) {
    ReleaseReservation(reserved);
    if (metrics_) metrics_->AddReject(RejectReason::kBadPayload);
    return absl::InvalidArgumentError(
        absl::StrCat("layer_update for ",
                     RoundName(update.step(), update.layer_index(), layer_name),
                     ": ", decoded.status().message()));
  }

  std::unique_ptr<Round> complete;
  int64_t merge_reserved = 0;
  absl::Status outcome;
  {
    absl::MutexLock lock(&mutex_);
    bytes_held_ -= reserved;  // replaced below by what is actually kept
    outcome = AcceptLocked(member, update, key, numel, layer_name, decoded,
                           &complete, &merge_reserved, &deliveries);
    UpdateGaugesLocked();
  }
  Deliver(deliveries);
  if (complete != nullptr) {
    FinishRound(member.job_id, update.step(), update.layer_index(),
                std::move(complete), merge_reserved);
  }
  return outcome;
}

absl::Status JobRegistry::AcceptLocked(
    const MemberId& member, const v1::LayerUpdate& update,
    std::pair<int64_t, uint32_t> key, uint64_t numel,
    const std::string& layer_name, absl::StatusOr<DecodedPayload>& decoded,
    std::unique_ptr<Round>* complete, int64_t* merge_reserved,
    std::vector<Delivery>* deliveries) {
  Job* found = FindJobOfLocked(member);
  if (found == nullptr ||
      found->members[member.rank].incarnation != member.incarnation) {
    return absl::FailedPreconditionError(
        "the stream was replaced or its job ended while its update was "
        "decoded");
  }
  Job& job = *found;
  // Another rank's update may have ended the round meanwhile.
  if (auto aborted = job.aborted.find(key); aborted != job.aborted.end()) {
    return aborted->second;
  }
  if (job.completed.count(key) != 0) {
    ++duplicates_;
    if (metrics_) metrics_->AddDuplicate();
    return absl::OkStatus();
  }
  if (!decoded.ok()) {
    if (metrics_) metrics_->AddReject(RejectReason::kNonFinite);
    const absl::Status rejected = WithRoundErrorReason(
        absl::AbortedError(absl::StrCat(
            RoundName(update.step(), update.layer_index(), layer_name),
            " rejected: rank ", member.rank, " sent a non-finite value (",
            decoded.status().message(), ")")),
        v1::ROUND_ERROR_REASON_NON_FINITE);
    AbortRoundLocked(job, update.step(), update.layer_index(), rejected,
                     deliveries);
    // The sender learns it from the returned status instead.
    const StreamSink* sender = job.members[member.rank].sink.get();
    deliveries->erase(std::remove_if(deliveries->begin(), deliveries->end(),
                                     [sender](const Delivery& d) {
                                       return d.sink.get() == sender;
                                     }),
                      deliveries->end());
    if (metrics_) metrics_->RoundFinished(RoundOutcome::kRejected, 0.0);
    return rejected;
  }
  auto existing = job.rounds.find(key);
  if (existing != job.rounds.end() &&
      existing->second->by_rank[member.rank].has_value()) {
    ++duplicates_;
    if (metrics_) metrics_->AddDuplicate();
    return absl::OkStatus();
  }
  if (existing == job.rounds.end()) {
    if (absl::Status status = CheckRoundLimitLocked(job, key); !status.ok()) {
      if (metrics_) metrics_->AddReject(RejectReason::kQuota);
      return status;
    }
  }
  // Everything accepting this contribution allocates, before allocating it:
  // the round's slots when it is new, the decoded payload, and the merge
  // when this contribution completes the round.
  const int64_t decoded_bytes = DecodedBytes(*decoded);
  const int64_t overhead = existing == job.rounds.end()
                               ? RoundOverheadBytes(job.world_size)
                               : 0;
  const int contributed =
      existing == job.rounds.end() ? 0 : existing->second->contributed;
  const uint64_t entries =
      (existing == job.rounds.end() ? 0 : existing->second->entries) +
      EntriesOf(*decoded);
  const bool completes = contributed + 1 == static_cast<int>(job.world_size);
  const int64_t merge = completes ? MergeBytesBound(numel, entries) : 0;
  if (absl::Status status = CheckQuotaLocked(
          decoded_bytes + overhead + merge,
          completes ? "for this contribution and the merge it completes"
                    : "for this contribution");
      !status.ok()) {
    if (metrics_) metrics_->AddReject(RejectReason::kQuota);
    return status;
  }
  std::unique_ptr<Round>& round = job.rounds[key];
  if (round == nullptr) {
    round = std::make_unique<Round>();
    round->started = absl::Now();
    round->deadline = round->started + options_.round_timeout;
    round->by_rank.resize(job.world_size);
    round->bytes = overhead;
    bytes_held_ += overhead;
    ++rounds_in_flight_;
  }
  round->by_rank[member.rank] = std::move(*decoded);
  ++round->contributed;
  round->entries = entries;
  round->bytes += decoded_bytes;
  bytes_held_ += decoded_bytes;
  if (metrics_) {
    metrics_->AddUplink(PayloadWireBytes(update.payload()),
                        static_cast<int64_t>(4 * numel));
  }
  if (completes) {
    *complete = std::move(round);
    job.rounds.erase(key);
    --rounds_in_flight_;
    *merge_reserved = merge;
    bytes_held_ += merge;
    job.completed[key];  // placeholder: duplicates wait for the merge
  }
  return absl::OkStatus();
}

absl::Status JobRegistry::CheckQuotaLocked(int64_t bytes,
                                           absl::string_view what) const {
  if (bytes_held_ + bytes <= options_.memory_quota_bytes) {
    return absl::OkStatus();
  }
  return WithRoundErrorReason(
      absl::ResourceExhaustedError(absl::StrCat(
          "memory quota reached: ", bytes_held_, " bytes held + ", bytes,
          " bytes ", what, " > --memory_quota_bytes = ",
          options_.memory_quota_bytes, "; retry later")),
      v1::ROUND_ERROR_REASON_SHARD_LIMIT);
}

absl::Status JobRegistry::CheckRoundLimitLocked(
    const Job& job, std::pair<int64_t, uint32_t> key) const {
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

void JobRegistry::ReleaseReservation(int64_t bytes) {
  if (bytes == 0) return;
  absl::MutexLock lock(&mutex_);
  bytes_held_ -= bytes;
  UpdateGaugesLocked();
}

void JobRegistry::FinishRound(const std::string& job_id, int64_t step,
                              uint32_t layer, std::unique_ptr<Round> round,
                              int64_t merge_reserved) {
  const absl::Time merge_start = absl::Now();
  absl::StatusOr<std::shared_ptr<const v1::AggregatorMessage>> message =
      MergeRound(step, layer, round->by_rank, options_.max_message_bytes);
  const double merge_seconds = absl::ToDoubleSeconds(absl::Now() - merge_start);

  std::vector<Delivery> deliveries;
  {
    absl::MutexLock lock(&mutex_);
    bytes_held_ -= round->bytes + merge_reserved;
    auto it = jobs_.find(job_id);
    if (it != jobs_.end()) {
      Job& job = *it->second;
      const RoundKey key(step, layer);
      if (!message.ok()) {
        job.completed.erase(key);
        AbortRoundLocked(
            job, step, layer,
            WithRoundErrorReason(
                absl::Status(message.status().code(),
                             absl::StrCat(RoundName(step, layer,
                                                    job.layers[layer].name()),
                                          " rejected: ",
                                          message.status().message())),
                RoundErrorReasonOf(message.status())),
            &deliveries);
        if (metrics_) metrics_->RoundFinished(RoundOutcome::kRejected, 0.0);
      } else {
        Job::Completed& done = job.completed[key];
        done.message = *message;
        done.bytes = kRecordOverheadBytes +
                     static_cast<int64_t>((*message)->ByteSizeLong());
        bytes_held_ += done.bytes;
        const v1::SparsePayload& payload = (*message)->merged_layer().payload();
        for (const Job::Member& member : job.members) {
          // A rank that already applied this step (it got the update from a
          // previous incarnation of this shard) must not get it twice.
          if (member.sink == nullptr || member.applied_step >= step) continue;
          deliveries.push_back({member.sink, *message});
          if (metrics_) {
            metrics_->AddDownlink(PayloadWireBytes(payload),
                                  static_cast<int64_t>(4 * payload.numel()));
          }
        }
        if (metrics_) {
          metrics_->ObserveMerge(merge_seconds);
          metrics_->RoundFinished(
              RoundOutcome::kCompleted,
              absl::ToDoubleSeconds(absl::Now() - round->started));
        }
        ReleaseAppliedLocked(job);
      }
      // Its last stream may have left during the merge, which kept it.
      MaybeDropJobLocked(job_id);
    }
    UpdateGaugesLocked();
  }
  Deliver(deliveries);
}

void JobRegistry::AbortRoundLocked(Job& job, int64_t step, uint32_t layer,
                                   const absl::Status& reason,
                                   std::vector<Delivery>* deliveries) {
  const RoundKey key(step, layer);
  auto round = job.rounds.find(key);
  if (round != job.rounds.end()) {
    bytes_held_ -= round->second->bytes;
    --rounds_in_flight_;
    job.rounds.erase(round);
  }
  RecordAbortLocked(job, key, reason);
  ENTROGRAD_LOG(kWarning, "job \"", job.id, "\": ", reason.message());
  auto message = MakeRoundError(step, layer, reason);
  for (const Job::Member& member : job.members) {
    if (member.sink != nullptr) deliveries->push_back({member.sink, message});
  }
}

void JobRegistry::RecordAbortLocked(Job& job, RoundKey key,
                                    const absl::Status& reason) {
  auto [it, inserted] = job.aborted.try_emplace(key, reason);
  if (!inserted) {
    job.aborted_bytes -= AbortRecordBytes(it->second);
    bytes_held_ -= AbortRecordBytes(it->second);
    it->second = reason;
  }
  job.aborted_bytes += AbortRecordBytes(reason);
  bytes_held_ += AbortRecordBytes(reason);
  // Records stay until every rank moved past their step, which a rank that
  // never joins never does: keep the newest max_rounds_per_job.
  while (static_cast<int64_t>(job.aborted.size()) >
         options_.max_rounds_per_job) {
    auto oldest = job.aborted.begin();
    job.aborted_bytes -= AbortRecordBytes(oldest->second);
    bytes_held_ -= AbortRecordBytes(oldest->second);
    job.aborted.erase(oldest);
  }
}

void JobRegistry::ReleaseAppliedLocked(Job& job) {
  const int64_t min_applied = job.MinAppliedStep();
  // After a restart, ranks that rejoin first resend steps the others already
  // applied; once every rank says so, those rebuilt rounds can never be
  // needed: drop them silently instead of letting them time out.
  for (auto it = job.rounds.begin();
       it != job.rounds.end() && it->first.first <= min_applied;) {
    bytes_held_ -= it->second->bytes;
    --rounds_in_flight_;
    it = job.rounds.erase(it);
  }
  for (auto it = job.completed.begin();
       it != job.completed.end() && it->first.first <= min_applied;) {
    if (it->second.message == nullptr) {  // still merging
      ++it;
      continue;
    }
    bytes_held_ -= it->second.bytes;
    it = job.completed.erase(it);
  }
  for (auto it = job.aborted.begin();
       it != job.aborted.end() && it->first.first <= min_applied;) {
    job.aborted_bytes -= AbortRecordBytes(it->second);
    bytes_held_ -= AbortRecordBytes(it->second);
    it = job.aborted.erase(it);
  }
}

void JobRegistry::DropRoundsLocked(Job& job) {
  for (auto& [key, round] : job.rounds) {
    bytes_held_ -= round->bytes;
    --rounds_in_flight_;
  }
  job.rounds.clear();
}

void JobRegistry::Leave(const MemberId& member, const StreamSink* sink) {
  absl::MutexLock lock(&mutex_);
  // A stale id (its job ended and may have been created again) has nothing
  // left to leave.
  Job* job = FindJobOfLocked(member);
  if (job == nullptr) return;
  Job::Member& self = job->members[member.rank];
  if (self.sink.get() == sink) {
    self.sink = nullptr;
    ENTROGRAD_LOG(kInfo, "job \"", member.job_id, "\" rank ", member.rank,
                  " left");
  }
  // With no stream left, no round can complete and nobody would hear of its
  // abort; every rank resends what it keeps when it joins again. Keeping
  // them would only keep the job (and its memory) until the round timeout.
  if (!job->HasLiveStream()) DropRoundsLocked(*job);
  MaybeDropJobLocked(member.job_id);
  UpdateGaugesLocked();
}

void JobRegistry::MaybeDropJobLocked(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  Job& job = *it->second;
  if (job.HasLiveStream() || !job.rounds.empty()) return;
  for (const auto& [key, done] : job.completed) {
    if (done.message == nullptr) return;  // a merge is still running
  }
  for (const auto& [key, done] : job.completed) bytes_held_ -= done.bytes;
  bytes_held_ -= job.table_bytes + job.aborted_bytes;
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
        const Round& round = *job->rounds[key];
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
        AbortRoundLocked(*job, key.first, key.second,
                         WithRoundErrorReason(
                             absl::AbortedError(reason),
                             v1::ROUND_ERROR_REASON_ROUND_TIMEOUT),
                         &deliveries);
        if (metrics_) metrics_->RoundFinished(RoundOutcome::kAborted, waited);
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
        AbortRoundLocked(
            *job, key.first, key.second,
            WithRoundErrorReason(absl::AbortedError(reason),
                                 v1::ROUND_ERROR_REASON_SHUTDOWN),
            &deliveries);
        if (metrics_) metrics_->RoundFinished(RoundOutcome::kAborted, 0.0);
      }
    }
    UpdateGaugesLocked();
  }
  Deliver(deliveries);
}

void JobRegistry::UpdateGaugesLocked() {
  if (metrics_ == nullptr) return;
  metrics_->SetActiveStreams(ActiveStreamsLocked());
  metrics_->SetRoundsInFlight(rounds_in_flight_);
  metrics_->SetBytesHeld(bytes_held_);
}

int64_t JobRegistry::ActiveStreamsLocked() const {
  int64_t streams = 0;
  for (const auto& [job_id, job] : jobs_) {
    for (const Job::Member& member : job->members) {
      streams += member.sink != nullptr;
    }
  }
  return streams;
}

int64_t JobRegistry::ActiveStreams() const {
  absl::MutexLock lock(&mutex_);
  return ActiveStreamsLocked();
}

void JobRegistry::Deliver(std::vector<Delivery>& deliveries) {
  for (Delivery& delivery : deliveries) {
    delivery.sink->Send(std::move(delivery.message));
  }
}

int64_t JobRegistry::RoundsInFlight() const {
  absl::MutexLock lock(&mutex_);
  return rounds_in_flight_;
}

int64_t JobRegistry::BytesHeld() const {
  absl::MutexLock lock(&mutex_);
  return bytes_held_;
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
