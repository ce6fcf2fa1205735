// One Exchange stream (one worker, one shard): reads the Join and the layer
// updates, hands them to the JobRegistry, and writes JoinAck, merged layers
// and round errors back in order. One reactor per stream owns the stream's
// state (grpc route_guide_callback_server style); the registry reaches the
// stream only through a ReactorSink, which outlives the reactor safely.
#ifndef ENTROGRAD_AGGREGATOR_SERVICE_EXCHANGE_REACTOR_H_
#define ENTROGRAD_AGGREGATOR_SERVICE_EXCHANGE_REACTOR_H_

#include <memory>
#include <optional>
#include <string>

#include "aggregator/rounds/job_registry.h"
#include "aggregator/auth/token_store.h"
#include "aggregator/service/reactor_sink.h"
#include "entrograd/v1/aggregator.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace entrograd::aggregator {

class ExchangeReactor
    : public grpc::ServerBidiReactor<v1::WorkerMessage, v1::AggregatorMessage>,
      private StreamWriter {
 public:
  // `registry` and `tokens` (null: no authentication) must outlive the
  // server. Checks the bearer token before reading anything. A worker that
  // lets more than `max_stream_queue_bytes` of answers queue up is ended
  // with RESOURCE_EXHAUSTED (ReactorSink).
  ExchangeReactor(grpc::CallbackServerContext* context, JobRegistry* registry,
                  const TokenStore* tokens, AggregatorMetrics* metrics,
                  int64_t max_stream_queue_bytes);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override;

 private:
  ~ExchangeReactor() override;
  // StreamWriter, for the sink.
  void StartMessageWrite(const v1::AggregatorMessage* message) override {
    StartWrite(message);
  }
  void FinishStream(const grpc::Status& status) override { Finish(status); }
  // Each returns whether to keep reading (false once the stream finished).
  bool HandleJoin(const v1::Join& join);
  bool HandleLayerUpdate(const v1::LayerUpdate& update);

  JobRegistry* const registry_;
  AggregatorMetrics* const metrics_;
  std::shared_ptr<ReactorSink> sink_;
  std::optional<std::string> authorized_job_;
  std::optional<MemberId> member_;
  v1::WorkerMessage request_;
};

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_SERVICE_EXCHANGE_REACTOR_H_
