#include "aggregator/service/exchange_session.h"

#include <utility>

#include "aggregator/rounds/log_text.h"
#include "aggregator/rounds/round_error.h"
#include "entrograd/common/log.h"

namespace entrograd::aggregator {

ExchangeSession::ExchangeSession(StreamReader* reader,
                                 std::shared_ptr<ReactorSink> sink,
                                 JobRegistry* registry, MergePool* pool,
                                 AggregatorMetrics& metrics)
    : reader_(reader),
      sink_(std::move(sink)),
      registry_(registry),
      pool_(pool),
      metrics_(metrics) {}

void ExchangeSession::Start(std::optional<std::string> authorized_job) {
  authorized_job_ = std::move(authorized_job);
  reader_->StartMessageRead(&request_);
}

void ExchangeSession::OnReadDone(bool ok) {
  if (!ok) {
    // The worker half-closed or the stream broke: end after queued writes.
    sink_->Close(absl::OkStatus());
    return;
  }
  switch (request_.kind_case()) {
    case v1::WorkerMessage::kJoin:
      // No read after the stream was finished.
      if (HandleJoin(request_.join())) reader_->StartMessageRead(&request_);
      break;
    case v1::WorkerMessage::kLayerUpdate:
      HandleLayerUpdate();
      break;
    default:
      sink_->Close(absl::InvalidArgumentError(
          "WorkerMessage carries neither join nor layer_update"));
      break;
  }
}

bool ExchangeSession::HandleJoin(const v1::Join& join) {
  if (member_.has_value()) {
    sink_->Close(absl::FailedPreconditionError(
        "a second Join on the same stream; open a new stream instead"));
    return false;
  }
  // On success the registry has already queued the JoinAck on sink_, ahead
  // of anything a round of the job can send.
  absl::StatusOr<MemberId> member =
      registry_->Join(join, authorized_job_, sink_);
  if (!member.ok()) {
    // The job id is untrusted until the registry accepted it.
    ENTROGRAD_LOG(kInfo, "Join of job \"", LogText(join.job_id()), "\" rank ",
                  join.rank(), " refused: ", member.status().ToString());
    sink_->Close(member.status());
    return false;
  }
  member_ = *std::move(member);
  return true;
}

void ExchangeSession::HandleLayerUpdate() {
  if (!member_.has_value()) {
    metrics_.AddReject(RejectReason::kBeforeJoin);
    sink_->Close(absl::FailedPreconditionError(
        "layer_update before Join: the first message must be a Join"));
    return;
  }
  // Released by the task as its last step: until then the stream cannot
  // finish, so this session outlives the task.
  sink_->Hold();
  pool_->Submit(
      [this](absl::Status pool_status) { RunUpdate(std::move(pool_status)); });
}

void ExchangeSession::RunUpdate(absl::Status pool_status) {
  // Release may finish the stream, after which the reactor (and this
  // session, and its reference to the sink) may be deleted at any moment.
  const std::shared_ptr<ReactorSink> sink = sink_;
  if (pool_status.ok()) {
    Contribute(request_.layer_update());
    // Under the hold the reactor is alive, so the read may start here, on
    // a pool thread; its OnReadDone may run before Release below.
    if (!sink->Closing()) reader_->StartMessageRead(&request_);
  } else {
    // Shutting down: the worker resends this update after reconnecting.
    sink->Close(pool_status);
  }
  sink->Release();
}

void ExchangeSession::Contribute(const v1::LayerUpdate& update) {
  absl::Status status = registry_->Contribute(*member_, update);
  if (status.ok()) return;
  ENTROGRAD_LOG(kDebug, "job \"", member_->job_id, "\" rank ", member_->rank,
                ": update (step ", update.step(), ", layer ",
                update.layer_index(), ") refused: ", status.ToString());
  // Refused (or its round aborted): tell this worker; the stream stays open.
  // Other ranks got their own RoundError from the registry when the round
  // was aborted. The registry attached the machine-readable reason to the
  // status.
  sink_->Send(MakeRoundError(update.step(), update.layer_index(), status));
}

void ExchangeSession::End() {
  if (member_.has_value()) registry_->Leave(*member_, sink_.get());
}

}  // namespace entrograd::aggregator
