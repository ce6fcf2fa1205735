// One Exchange stream (one worker, one shard) on the gRPC callback API: the
// bearer token check, then an ExchangeSession that reads the Join and the
// layer updates and hands the updates to the MergePool. One reactor per
// stream owns the stream's state (grpc route_guide_callback_server style);
// the registry reaches the stream only through a ReactorSink, which outlives
// the reactor safely. No callback here decodes, merges or encodes: those
// block, and the callback API asks reactions not to.
#ifndef ENTROGRAD_AGGREGATOR_SERVICE_EXCHANGE_REACTOR_H_
#define ENTROGRAD_AGGREGATOR_SERVICE_EXCHANGE_REACTOR_H_

#include <cstdint>
#include <memory>

#include "aggregator/auth/token_store.h"
#include "aggregator/metrics/aggregator_metrics.h"
#include "aggregator/rounds/job_registry.h"
#include "aggregator/service/exchange_session.h"
#include "aggregator/service/merge_pool.h"
#include "aggregator/service/reactor_sink.h"
#include "entrograd/v1/aggregator.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace entrograd::aggregator {

class ExchangeReactor
    : public grpc::ServerBidiReactor<v1::WorkerMessage, v1::AggregatorMessage>,
      private StreamWriter,
      private StreamReader {
 public:
  // `registry`, `tokens` (null: no authentication), `metrics` and `pool`
  // must outlive the server. Checks the bearer token before reading
  // anything. A worker that lets more than `max_stream_queue_bytes` of
  // answers queue up is ended with RESOURCE_EXHAUSTED (ReactorSink). Deletes
  // itself in OnDone.
  ExchangeReactor(grpc::CallbackServerContext* context, JobRegistry* registry,
                  const TokenStore* tokens, AggregatorMetrics& metrics,
                  MergePool* pool, int64_t max_stream_queue_bytes);

  void OnReadDone(bool ok) override { session_.OnReadDone(ok); }
  void OnWriteDone(bool ok) override { sink_->WriteDone(ok); }
  void OnDone() override;

 private:
  ~ExchangeReactor() override;
  // StreamWriter, for the sink.
  void StartMessageWrite(const v1::AggregatorMessage* message) override {
    StartWrite(message);
  }
  // Sends the status's StreamEndReason, if any, as trailing metadata.
  void FinishStream(const absl::Status& status) override;
  // StreamReader, for the session.
  void StartMessageRead(v1::WorkerMessage* message) override {
    StartRead(message);
  }

  grpc::CallbackServerContext* const context_;  // owned by gRPC
  const std::shared_ptr<ReactorSink> sink_;
  ExchangeSession session_;
};

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_SERVICE_EXCHANGE_REACTOR_H_
