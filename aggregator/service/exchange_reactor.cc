#include "aggregator/service/exchange_reactor.h"

#include "absl/strings/str_cat.h"
#include "aggregator/rounds/log_text.h"
#include "aggregator/rounds/round_error.h"
#include "aggregator/service/reactor_sink.h"
#include "entrograd/common/log.h"
#include "entrograd/wire/grpc_status.h"

namespace entrograd::aggregator {

namespace {

std::optional<absl::string_view> AuthorizationOf(
    const grpc::CallbackServerContext& context) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return std::nullopt;
  return absl::string_view(it->second.data(), it->second.size());
}

}  // namespace

ExchangeReactor::ExchangeReactor(grpc::CallbackServerContext* context,
                                 JobRegistry* registry,
                                 const TokenStore* tokens,
                                 AggregatorMetrics* metrics,
                                 int64_t max_stream_queue_bytes)
    : registry_(registry),
      metrics_(metrics),
      sink_(std::make_shared<ReactorSink>(static_cast<StreamWriter*>(this),
                                          max_stream_queue_bytes)) {
  if (tokens != nullptr) {
    absl::StatusOr<std::optional<std::string>> job =
        tokens->Authorize(AuthorizationOf(*context));
    if (!job.ok()) {
      if (metrics_) metrics_->AddReject(RejectReason::kUnauthenticated);
      sink_->Close(job.status());  // before reading anything
      return;
    }
    authorized_job_ = *job;
  }
  StartRead(&request_);
}

ExchangeReactor::~ExchangeReactor() = default;

void ExchangeReactor::OnReadDone(bool ok) {
  if (!ok) {
    // The worker half-closed or the stream broke: end after queued writes.
    sink_->Close(absl::OkStatus());
    return;
  }
  bool keep_reading = false;
  switch (request_.kind_case()) {
    case v1::WorkerMessage::kJoin:
      keep_reading = HandleJoin(request_.join());
      break;
    case v1::WorkerMessage::kLayerUpdate:
      keep_reading = HandleLayerUpdate(request_.layer_update());
      break;
    default:
      sink_->Close(absl::InvalidArgumentError(
          "WorkerMessage carries neither join nor layer_update"));
      break;
  }
  // No read after the stream was finished.
  if (keep_reading) StartRead(&request_);
}

bool ExchangeReactor::HandleJoin(const v1::Join& join) {
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

bool ExchangeReactor::HandleLayerUpdate(const v1::LayerUpdate& update) {
  if (!member_.has_value()) {
    if (metrics_) metrics_->AddReject(RejectReason::kBeforeJoin);
    sink_->Close(absl::FailedPreconditionError(
        "layer_update before Join: the first message must be a Join"));
    return false;
  }
  absl::Status status = registry_->Contribute(*member_, update);
  if (status.ok()) return true;
  ENTROGRAD_LOG(kDebug, "job \"", member_->job_id, "\" rank ", member_->rank,
                ": update (step ", update.step(), ", layer ",
                update.layer_index(), ") refused: ", status.ToString());
  // Refused (or its round aborted): tell this worker; the stream stays open.
  // Other ranks got their own RoundError from the registry when the round
  // was aborted.
  // The registry attached the machine-readable reason to the status.
  sink_->Send(MakeRoundError(update.step(), update.layer_index(), status));
  return true;
}

void ExchangeReactor::OnWriteDone(bool ok) { sink_->WriteDone(ok); }

void ExchangeReactor::OnDone() {
  sink_->Detach();
  if (member_.has_value()) registry_->Leave(*member_, sink_.get());
  delete this;
}

}  // namespace entrograd::aggregator
