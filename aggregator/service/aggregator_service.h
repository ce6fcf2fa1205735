// entrograd.v1.Aggregator on the gRPC callback API: one ExchangeReactor per
// stream.
#ifndef ENTROGRAD_AGGREGATOR_SERVICE_AGGREGATOR_SERVICE_H_
#define ENTROGRAD_AGGREGATOR_SERVICE_AGGREGATOR_SERVICE_H_

#include "aggregator/rounds/job_registry.h"
#include "aggregator/auth/token_store.h"
#include "entrograd/v1/aggregator.grpc.pb.h"

namespace entrograd::aggregator {

class AggregatorService final : public v1::Aggregator::CallbackService {
 public:
  // Borrows all three (tokens and metrics may be null); they must outlive
  // the gRPC server. `max_stream_queue_bytes` bounds each stream's queue of
  // outgoing messages (ReactorSink); positive.
  AggregatorService(JobRegistry* registry, const TokenStore* tokens,
                    AggregatorMetrics* metrics, int64_t max_stream_queue_bytes)
      : registry_(registry),
        tokens_(tokens),
        metrics_(metrics),
        max_stream_queue_bytes_(max_stream_queue_bytes) {}

  grpc::ServerBidiReactor<v1::WorkerMessage, v1::AggregatorMessage>* Exchange(
      grpc::CallbackServerContext* context) override;

 private:
  JobRegistry* const registry_;
  const TokenStore* const tokens_;
  AggregatorMetrics* const metrics_;
  const int64_t max_stream_queue_bytes_;
};

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_SERVICE_AGGREGATOR_SERVICE_H_
