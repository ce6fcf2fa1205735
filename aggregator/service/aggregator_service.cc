#include "aggregator/service/aggregator_service.h"

#include "aggregator/service/exchange_reactor.h"

namespace entrograd::aggregator {

AggregatorService::AggregatorService(JobRegistry* registry,
                                     const TokenStore* tokens,
                                     AggregatorMetrics* metrics,
                                     const ServiceOptions& options)
    : registry_(registry),
      tokens_(tokens),
      metrics_(metrics != nullptr ? *metrics : AggregatorMetrics::Null()),
      max_stream_queue_bytes_(options.max_stream_queue_bytes),
      pool_(options.merge_threads) {}

AggregatorService::~AggregatorService() = default;

grpc::ServerBidiReactor<v1::WorkerMessage, v1::AggregatorMessage>*
AggregatorService::Exchange(grpc::CallbackServerContext* context) {
  // Deletes itself in OnDone.
  return new ExchangeReactor(context, registry_, tokens_, metrics_, &pool_,
                             max_stream_queue_bytes_);
}

}  // namespace entrograd::aggregator
