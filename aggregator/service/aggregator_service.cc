#include "aggregator/service/aggregator_service.h"

#include "aggregator/service/exchange_reactor.h"

namespace entrograd::aggregator {

grpc::ServerBidiReactor<v1::WorkerMessage, v1::AggregatorMessage>*
AggregatorService::Exchange(grpc::CallbackServerContext* context) {
  // Deletes itself in OnDone.
  return new ExchangeReactor(context, registry_, tokens_, metrics_,
                             max_stream_queue_bytes_);
}

}  // namespace entrograd::aggregator
