#include "transport/shard_stream.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "entrograd/common/log.h"
#include "entrograd/codec.h"
#include "entrograd/wire/grpc_status.h"
#include "entrograd/wire/payload_proto.h"
#include "transport/retry_rules.h"

namespace entrograd {

namespace {

// The shortest wait for a JoinAck, even just before giving up.
constexpr absl::Duration kShortestJoinWait = absl::Milliseconds(200);
// After a failed write, how long the reader gets to see the call's end.
constexpr absl::Duration kEndedCallGrace = absl::Seconds(1);

int64_t PayloadWireBytes(const v1::SparsePayload& payload) {
  return static_cast<int64_t>(payload.index_bytes().size() +
                              payload.value_bytes().size());
}

absl::StatusCode CodeOf(int32_t code) {
  if (code <= 0 ||
      code > static_cast<int32_t>(absl::StatusCode::kUnauthenticated)) {
    return absl::StatusCode::kUnknown;
  }
  return static_cast<absl::StatusCode>(code);
}

}  // namespace

ShardStream::ShardStream(ShardStreamOptions options,
                         std::shared_ptr<grpc::Channel> channel,
                         ClientState* state)
    : options_(std::move(options)),
      channel_(std::move(channel)),
      stub_(v1::Aggregator::NewStub(channel_)),
      state_(state),
      highest_sent_step_(state->layer_numels.size(), -1),
      rng_(options_.seed) {}

ShardStream::~ShardStream() {
  BeginClose(absl::Now());
  FinishClose();
}

std::string ShardStream::Name() const {
  return absl::StrCat("shard ", options_.shard, " (", options_.address, ")");
}

void ShardStream::Start(absl::Time join_deadline) {
  {
    absl::MutexLock lock(&mutex_);
    join_deadline_ = join_deadline;
  }
  session_ = std::thread([this] { Run(); });
}

absl::Status ShardStream::AwaitJoined() {
  absl::MutexLock lock(&mutex_);
  // The session resolves the start by the join deadline; the slack covers a
  // connect attempt that overruns it (then Close cancels it).
  const absl::Time deadline = join_deadline_ + absl::Seconds(1);
  while (!start_status_.has_value()) {
    if (changed_.WaitWithDeadline(&mutex_, deadline) &&
        !start_status_.has_value()) {
      return absl::DeadlineExceededError(
          absl::StrCat("no JoinAck from ", Name(), " before the join timeout"));
    }
  }
  return *start_status_;
}

void ShardStream::ResolveStart(absl::Status status) {
  absl::MutexLock lock(&mutex_);
  if (!start_status_.has_value()) {
    start_status_ = std::move(status);
    changed_.SignalAll();
  }
}

bool ShardStream::Stopping() {
  absl::MutexLock lock(&mutex_);
  return stopping_;
}

absl::Status ShardStream::Send(
    int64_t step, uint32_t layer,
    std::shared_ptr<const v1::WorkerMessage> message) {
  const uint64_t message_bytes = message->ByteSizeLong();
  absl::MutexLock lock(&mutex_);
  if (store_.Contains(step, layer)) {
    return absl::FailedPreconditionError(
        absl::StrCat("step ", step, ", layer ", layer,
                     " was already sent; a contribution is sent once"));
  }
  if (shard_max_message_bytes_ > 0 &&
      message_bytes > shard_max_message_bytes_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "step ", step, ", layer ", layer, ": the update is ", message_bytes,
        " bytes, more than the ", shard_max_message_bytes_, " bytes that ",
        Name(), " accepts (JoinAck.max_message_bytes)"));
  }
  store_.Keep(step, layer, message);
  if (layer < highest_sent_step_.size()) {
    highest_sent_step_[layer] = std::max(highest_sent_step_[layer], step);
  }
  // While disconnected the store alone holds it: the resend after the next
  // JoinAck writes it.
  if (joined_) {
    queue_.push_back(std::move(message));
    changed_.SignalAll();
  }
  return absl::OkStatus();
}

void ShardStream::BeginClose(absl::Time graceful_deadline) {
  absl::MutexLock lock(&mutex_);
  if (stopping_) {
    graceful_deadline_ = std::min(graceful_deadline_, graceful_deadline);
  } else {
    stopping_ = true;
    graceful_deadline_ = graceful_deadline;
  }
  changed_.SignalAll();
}

void ShardStream::FinishClose() {
  if (!session_.joinable()) {
    ResolveStart(absl::CancelledError("the client was closed"));
    return;
  }
  {
    absl::MutexLock lock(&mutex_);
    // The session half-closes and waits for the shard until the graceful
    // deadline; a little later, cancel whatever still blocks (a write the
    // shard does not read, a connect attempt).
    const absl::Time deadline = graceful_deadline_ + absl::Milliseconds(100);
    while (!session_done_) {
      if (changed_.WaitWithDeadline(&mutex_, deadline)) break;
    }
    if (!session_done_ && context_ != nullptr) context_->TryCancel();
  }
  session_.join();
}

void ShardStream::Run() {
  Backoff backoff(options_.backoff, options_.seed ^ 0x9E3779B97F4A7C15ull);
  bool ever_joined = false;
  // Start of the give-up clock: the first break since the last progress.
  absl::Time disconnected_since;
  bool clock_running = false;
  absl::Status last_error;
  while (!Stopping()) {
    absl::Time give_up_at;
    {
      absl::MutexLock lock(&mutex_);
      give_up_at = ever_joined ? disconnected_since + options_.give_up_after
                               : join_deadline_;
    }
    // Each try gets a moment, even the last one before giving up.
    const absl::Time attempt_start = absl::Now();
    const absl::Time ack_deadline =
        std::min(attempt_start + options_.join_timeout,
                 std::max(give_up_at, attempt_start + kShortestJoinWait));
    ConnectionEnd end = RunConnection(ack_deadline);
    if (Stopping()) break;
    if (end.joined) {
      ever_joined = true;
      // A Join alone is no progress: the clock of an earlier break runs on
      // unless rounds moved or the stream held for a give-up period.
      const absl::Time now = absl::Now();
      if (!clock_running || end.progressed ||
          now - attempt_start >= options_.give_up_after) {
        disconnected_since = now;
        backoff.Reset();
      }
      clock_running = true;
      give_up_at = disconnected_since + options_.give_up_after;
    }
    if (end.protocol_fault || !IsRetryableStreamEnd(end.status.code())) {
      absl::Status status =
          end.protocol_fault ? end.status : FatalEnd(end.status);
      if (ever_joined) {
        ENTROGRAD_LOG(kError, status.ToString());
        state_->inbox.Fail(status);
      }
      ResolveStart(std::move(status));
      break;
    }
    if (end.joined) {
      ENTROGRAD_LOG(kWarning, Name(), ": stream ended (", end.status.ToString(),
                    "); reconnecting");
    }
    last_error = end.status;
    const absl::Time now = absl::Now();
    if (now >= give_up_at) {
      absl::Status status;
      if (ever_joined) {
        status = absl::UnavailableError(absl::StrCat(
            Name(), " unreachable or without progress for ",
            absl::FormatDuration(now - disconnected_since),
            " (reconnect_give_up_after) since its stream broke; last error: ",
            last_error.ToString()));
        ENTROGRAD_LOG(kError, status.ToString());
        state_->inbox.Fail(status);
      } else {
        const std::string message = absl::StrCat(
            "no JoinAck from ", Name(),
            " within the join timeout; last error: ", last_error.ToString());
        status = last_error.code() == absl::StatusCode::kUnavailable
                     ? absl::UnavailableError(message)
                     : absl::DeadlineExceededError(message);
      }
      ResolveStart(std::move(status));
      break;
    }
    const absl::Time wake = std::min(now + backoff.Next(), give_up_at);
    absl::MutexLock lock(&mutex_);
    while (!stopping_ && !changed_.WaitWithDeadline(&mutex_, wake)) {
    }
  }
  ResolveStart(absl::CancelledError("the client was closed"));
  absl::MutexLock lock(&mutex_);
  session_done_ = true;
  changed_.SignalAll();
}

ShardStream::ConnectionEnd ShardStream::RunConnection(absl::Time ack_deadline) {
  Connection connection;
  connection.context = std::make_shared<grpc::ClientContext>();
  connection.context->set_deadline(
      absl::ToChronoTime(absl::Now() + options_.stream_lifetime));
  if (!options_.token.empty()) {
    connection.context->AddMetadata("authorization",
                                    absl::StrCat("Bearer ", options_.token));
  }
  {
    absl::MutexLock lock(&mutex_);
    if (stopping_) return {absl::CancelledError("closing"), false};
    context_ = connection.context;
    ack_.reset();
    reader_done_ = false;
  }
  // The reader thread opens the call and sends the Join, so that this
  // thread can bound the wait for the JoinAck (a connect attempt may block).
  std::thread reader([this, &connection] { ReadLoop(&connection); });

  bool acked = false;
  bool timed_out = false;
  bool acked_progress = false;
  int64_t merged_before = 0;
  std::vector<ContributionStore::Kept> resend;
  {
    absl::MutexLock lock(&mutex_);
    while (!ack_.has_value() && !reader_done_ && !stopping_) {
      if (changed_.WaitWithDeadline(&mutex_, ack_deadline) &&
          !ack_.has_value() && !reader_done_) {
        timed_out = true;
        break;
      }
    }
    acked = ack_.has_value() && !stopping_;
    if (acked) {
      // Everything not yet written is in the store: resend what it keeps
      // above the shard's watermark, then what SendLayer queues from now.
      queue_.clear();
      resend = store_.Above(ack_->merged_step());
      for (auto& [key, refusal] : refusals_) refusal.scheduled = false;
      if (ack_->max_message_bytes() > 0) {
        shard_max_message_bytes_ = ack_->max_message_bytes();
      }
      if (ack_->merged_step() > highest_acked_step_) {
        // Not on the first Join: there is no earlier ack to compare with.
        if (joins_ > 0) acked_progress = true;
        highest_acked_step_ = ack_->merged_step();
      }
      merged_before = merged_received_;
      joined_ = true;
      ++joins_;
      if (joins_ > 1) state_->traffic.reconnects.fetch_add(1);
    }
  }

  if (!acked) {
    CancelUnlessEnded(connection.context.get());
    reader.join();
    absl::Status status = connection.stream == nullptr
                              ? absl::UnavailableError("the call did not start")
                              : StreamEndStatus(connection.stream->Finish(),
                                                *connection.context);
    if (timed_out && status.code() == absl::StatusCode::kCancelled) {
      status = absl::DeadlineExceededError("no JoinAck before the deadline");
    }
    absl::MutexLock lock(&mutex_);
    context_.reset();
    return {status, false};
  }

  ResolveStart(absl::OkStatus());
  Stream* stream = connection.stream.get();
  bool writable = true;
  for (const ContributionStore::Kept& kept : resend) {
    if (!WriteUpdate(stream, *kept.message)) {
      writable = false;
      break;
    }
  }
  if (writable) writable = WriteLoop(stream);

  if (writable && Stopping()) {
    // Closing: half-close and let the shard end the stream (it flushes what
    // it queued) until the graceful deadline.
    stream->WritesDone();
    absl::MutexLock lock(&mutex_);
    while (!reader_done_ &&
           !changed_.WaitWithDeadline(&mutex_, graceful_deadline_)) {
    }
  } else if (!writable) {
    // A failed write means the call ended: let the reader see the shard's
    // status instead of replacing it with CANCELLED.
    const absl::Time deadline = absl::Now() + kEndedCallGrace;
    absl::MutexLock lock(&mutex_);
    while (!reader_done_ && !stopping_ &&
           !changed_.WaitWithDeadline(&mutex_, deadline)) {
    }
  }
  CancelUnlessEnded(connection.context.get());
  reader.join();
  absl::Status status = StreamEndStatus(stream->Finish(), *connection.context);
  absl::MutexLock lock(&mutex_);
  joined_ = false;
  context_.reset();
  const bool faulted = protocol_fault_.has_value();
  if (faulted) {
    status = *protocol_fault_;
    protocol_fault_.reset();
  }
  return {status, true, acked_progress || merged_received_ > merged_before,
          faulted};
}

void ShardStream::CancelUnlessEnded(grpc::ClientContext* context) {
  // A cancel after the reader saw the end would replace the shard's status
  // (what Finish returns) with CANCELLED.
  absl::MutexLock lock(&mutex_);
  if (!reader_done_) context->TryCancel();
}

void ShardStream::ReadLoop(Connection* connection) {
  connection->stream = stub_->Exchange(connection->context.get());
  v1::WorkerMessage join;
  *join.mutable_join() = state_->join;
  join.mutable_join()->set_applied_step(state_->inbox.applied_step());
  connection->stream->Write(join);  // a failure shows as Read failing

  v1::AggregatorMessage message;
  bool first = true;
  bool faulted = false;  // the shard broke the protocol: drain until the end
  while (connection->stream->Read(&message)) {
    if (faulted) continue;
    if (first) {
      first = false;
      if (!message.has_join_ack()) {
        ENTROGRAD_LOG(kWarning, Name(), ": first message is not a JoinAck: ",
                      message.ShortDebugString().substr(0, 200));
        connection->context->TryCancel();
        continue;
      }
      absl::MutexLock lock(&mutex_);
      ack_ = message.join_ack();
      changed_.SignalAll();
      continue;
    }
    switch (message.kind_case()) {
      case v1::AggregatorMessage::kMergedLayer:
        if (!HandleMergedLayer(message.merged_layer())) {
          connection->context->TryCancel();
          faulted = true;
        }
        break;
      case v1::AggregatorMessage::kRoundError:
        HandleRoundError(message.round_error());
        break;
      default:
        ENTROGRAD_LOG(kWarning, Name(), ": unexpected message ignored: ",
                      message.ShortDebugString().substr(0, 200));
        break;
    }
  }
  absl::MutexLock lock(&mutex_);
  reader_done_ = true;
  changed_.SignalAll();
}

bool ShardStream::WriteLoop(Stream* stream) {
  while (true) {
    std::shared_ptr<const v1::WorkerMessage> next;
    {
      absl::MutexLock lock(&mutex_);
      while (next == nullptr) {
        if (stopping_ || reader_done_) return true;
        if (!queue_.empty()) {
          next = std::move(queue_.front());
          queue_.pop_front();
          break;
        }
        const absl::Time now = absl::Now();
        if (NextRetryDueLocked() <= now) {
          next = TakeDueRetryLocked(now);
          continue;
        }
        changed_.WaitWithDeadline(&mutex_, NextRetryDueLocked());
      }
    }
    if (!WriteUpdate(stream, *next)) return false;
  }
}

bool ShardStream::WriteUpdate(Stream* stream,
                              const v1::WorkerMessage& message) {
  // Counted before the write: its answer may arrive (and the caller look
  // at traffic()) before Write returns. Taken back if the write fails.
  const v1::SparsePayload& payload = message.layer_update().payload();
  const int64_t wire_bytes = PayloadWireBytes(payload);
  const int64_t dense_bytes = static_cast<int64_t>(4 * payload.numel());
  state_->traffic.uplink_wire_bytes.fetch_add(wire_bytes);
  state_->traffic.uplink_dense_bytes.fetch_add(dense_bytes);
  if (stream->Write(message)) return true;
  state_->traffic.uplink_wire_bytes.fetch_sub(wire_bytes);
  state_->traffic.uplink_dense_bytes.fetch_sub(dense_bytes);
  return false;
}

absl::Time ShardStream::NextRetryDueLocked() {
  absl::Time due = absl::InfiniteFuture();
  for (const auto& [key, refusal] : refusals_) {
    if (refusal.scheduled) due = std::min(due, refusal.due);
  }
  return due;
}

std::shared_ptr<const v1::WorkerMessage> ShardStream::TakeDueRetryLocked(
    absl::Time now) {
  const int64_t applied = state_->inbox.applied_step();
  for (auto it = refusals_.begin(); it != refusals_.end();) {
    const auto [step, layer] = it->first;
    Refusal& refusal = it->second;
    if (step <= applied) {
      it = refusals_.erase(it);
      continue;
    }
    if (!refusal.scheduled || refusal.due > now) {
      ++it;
      continue;
    }
    refusal.scheduled = false;
    std::shared_ptr<const v1::WorkerMessage> message = store_.Find(step, layer);
    if (message == nullptr) {  // no longer kept: nothing to retry
      it = refusals_.erase(it);
      continue;
    }
    // The same payload, with today's applied step: an OUT_OF_RANGE refusal
    // clears only once the shard learns that the ranks applied more.
    if (message->layer_update().applied_step() < applied) {
      auto refreshed = std::make_shared<v1::WorkerMessage>(*message);
      refreshed->mutable_layer_update()->set_applied_step(applied);
      message = std::move(refreshed);
    }
    return message;
  }
  return nullptr;
}

absl::Status ShardStream::FatalEnd(const absl::Status& end) const {
  if (StreamEndReasonOf(end) == v1::STREAM_END_REASON_RANK_REPLACED) {
    // A newer incarnation of this rank joined the shard (aggregator.proto):
    // another process runs as this rank, or this one was restarted.
    const v1::Join& join = state_->join;
    return absl::AbortedError(absl::StrCat(
        "rank ", join.rank(), " (incarnation ", join.incarnation(),
        ") was taken over by another process on ", Name(),
        "; check for two workers started with the same rank: ", end.message()));
  }
  return absl::Status(end.code(), absl::StrCat(Name(), ": ", end.message()));
}

absl::Status ShardStream::CheckMergedLayer(
    const v1::MergedLayer& merged) const {
  const int64_t step = merged.step();
  const uint32_t layer = merged.layer_index();
  const std::string what =
      absl::StrCat(Name(), " sent a merged update for step ", step, ", layer ",
                   layer, " that breaks the protocol: ");
  if (layer >= state_->layer_numels.size()) {
    return absl::InternalError(absl::StrCat(
        what, "the layer table has ", state_->layer_numels.size(), " layers"));
  }
  if (layer >= options_.owned_layers.size() || !options_.owned_layers[layer]) {
    return absl::InternalError(
        absl::StrCat(what, "the shard map gives that layer to another shard"));
  }
  const uint32_t world_size = state_->join.world_size();
  if (merged.contributors() != 0 && merged.contributors() != world_size) {
    return absl::InternalError(absl::StrCat(what, merged.contributors(),
                                            " contributors, world_size is ",
                                            world_size));
  }
  if (merged.payload().numel() != state_->layer_numels[layer]) {
    return absl::InternalError(absl::StrCat(what, merged.payload().numel(),
                                            " elements, the layer has ",
                                            state_->layer_numels[layer]));
  }
  return absl::OkStatus();
}

bool ShardStream::HandleMergedLayer(const v1::MergedLayer& merged) {
  const int64_t step = merged.step();
  const uint32_t layer = merged.layer_index();
  const int64_t wire_bytes = PayloadWireBytes(merged.payload());
  state_->traffic.downlink_wire_bytes.fetch_add(wire_bytes);
  state_->traffic.downlink_dense_bytes.fetch_add(
      static_cast<int64_t>(4 * merged.payload().numel()));
  absl::Status fault = CheckMergedLayer(merged);
  absl::StatusOr<DecodedPayload> decoded;
  {
    absl::MutexLock lock(&mutex_);
    if (fault.ok() && step > state_->inbox.applied_step() &&
        step > highest_sent_step_[layer]) {
      fault = absl::InternalError(absl::StrCat(
          Name(), " sent a merged update for step ", step, ", layer ", layer,
          " that breaks the protocol: the highest step sent for that layer "
          "is ",
          highest_sent_step_[layer]));
    }
  }
  // Duplicates (a resend answered again) and applied steps: no decoding.
  const bool wanted = fault.ok() && state_->inbox.Wants(step, layer);
  if (wanted) {
    decoded = DecodePayload(PayloadViewOfProto(merged.payload()));
    if (!decoded.ok()) {
      fault = absl::InternalError(absl::StrCat(
          Name(), " sent a merged update for step ", step, ", layer ", layer,
          " that breaks the protocol: ", decoded.status().message()));
    }
  }
  {
    absl::MutexLock lock(&mutex_);
    if (!fault.ok()) {
      ENTROGRAD_LOG(kError, fault.ToString());
      if (!protocol_fault_.has_value()) protocol_fault_ = std::move(fault);
      return false;
    }
    refusals_.erase(RoundKey(step, layer));
    // A duplicate (a resend answered again) is no progress.
    if (wanted) ++merged_received_;
  }
  if (!wanted) return true;
  MergedLayerUpdate update;
  update.step = step;
  update.layer = layer;
  update.payload = std::move(*decoded);
  update.wire_bytes = wire_bytes;
  state_->inbox.Deliver(step, layer, std::move(update));
  return true;
}

void ShardStream::HandleRoundError(const v1::RoundError& error) {
  const int64_t step = error.step();
  const uint32_t layer = error.layer_index();
  const absl::StatusCode code = CodeOf(error.code());
  if (step <= state_->inbox.applied_step()) {
    // A refused resend, or a stale round rebuilt after a shard restart that
    // could not complete: that step is done here.
    ENTROGRAD_LOG(kDebug, Name(), ": ignoring a round error for applied step ",
                  step, ": ", error.message());
    return;
  }
  if (IsRetryableRoundError(code, error.reason())) {
    absl::MutexLock lock(&mutex_);
    const absl::Time now = absl::Now();
    auto [it, inserted] = refusals_.try_emplace(RoundKey(step, layer));
    Refusal& refusal = it->second;
    if (inserted) refusal.first_refused = now;
    if (now - refusal.first_refused < options_.give_up_after &&
        store_.Contains(step, layer)) {
      refusal.due =
          now + JitteredDelay(options_.backoff, refusal.attempts++, rng_);
      refusal.scheduled = true;
      changed_.SignalAll();
      return;
    }
    refusals_.erase(it);
  }
  // The reason, not the text, says what happened; the text explains it.
  const char* what = "";
  switch (error.reason()) {
    case v1::ROUND_ERROR_REASON_NON_FINITE:
      what = "a rank sent NaN/Inf, so no rank gets this round: ";
      break;
    case v1::ROUND_ERROR_REASON_MERGED_TOO_LARGE:
      what = "the merged update is too large for the shard to send: ";
      break;
    default:
      break;
  }
  state_->inbox.Deliver(
      step, layer,
      absl::Status(code,
                   absl::StrCat(what, error.message(), " [", Name(), "]")));
}

}  // namespace entrograd
