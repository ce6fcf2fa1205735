#include "aggregator/service/exchange_reactor.h"

#include <optional>
#include <string>

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
                                 AggregatorMetrics& metrics, MergePool* pool,
                                 int64_t max_stream_queue_bytes)
    : context_(context),
      sink_(std::make_shared<ReactorSink>(static_cast<StreamWriter*>(this),
                                          max_stream_queue_bytes)),
      session_(static_cast<StreamReader*>(this), sink_, registry, pool,
               metrics) {
  std::optional<std::string> authorized_job;
  if (tokens != nullptr) {
    absl::StatusOr<std::optional<std::string>> job =
        tokens->Authorize(AuthorizationOf(*context));
    if (!job.ok()) {
      metrics.AddReject(RejectReason::kUnauthenticated);
      sink_->Close(job.status());  // before reading anything
      return;
    }
    authorized_job = *std::move(job);
  }
  session_.Start(std::move(authorized_job));
}

ExchangeReactor::~ExchangeReactor() = default;

void ExchangeReactor::FinishStream(const absl::Status& status) {
  const v1::StreamEndReason reason = StreamEndReasonOf(status);
  if (reason != v1::STREAM_END_REASON_UNSPECIFIED) {
    context_->AddTrailingMetadata(std::string(kStreamEndReasonKey),
                                  v1::StreamEndReason_Name(reason));
  }
  Finish(ToGrpcStatus(status));
}

void ExchangeReactor::OnDone() {
  sink_->Detach();
  session_.End();
  delete this;
}

}  // namespace entrograd::aggregator
