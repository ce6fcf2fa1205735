// entrograd.v1.Aggregator on the gRPC callback API: one ExchangeReactor per
// stream, and the MergePool that does every stream's decoding, merging and
// encoding off gRPC's callback threads.
#ifndef ENTROGRAD_AGGREGATOR_SERVICE_AGGREGATOR_SERVICE_H_
#define ENTROGRAD_AGGREGATOR_SERVICE_AGGREGATOR_SERVICE_H_

#include <cstdint>

#include "aggregator/metrics/aggregator_metrics.h"
#include "aggregator/rounds/job_registry.h"
#include "aggregator/auth/token_store.h"
#include "aggregator/service/merge_pool.h"
#include "entrograd/v1/aggregator.grpc.pb.h"

namespace entrograd::aggregator {

struct ServiceOptions {
  // Bound on each stream's queue of outgoing messages, bytes (ReactorSink);
  // positive.
  int64_t max_stream_queue_bytes = int64_t{1} << 30;
  // MergePool threads: how many contributions are decoded, or rounds merged
  // and encoded, at once; at least 1.
  int merge_threads = 1;
};

class AggregatorService final : public v1::Aggregator::CallbackService {
 public:
  // Borrows `registry`, `tokens` and `metrics` (tokens null: no
  // authentication; metrics null: AggregatorMetrics::Null()); they must
  // outlive the service. Starts the merge pool's threads.
  AggregatorService(JobRegistry* registry, const TokenStore* tokens,
                    AggregatorMetrics* metrics, const ServiceOptions& options);
  // Stops the merge pool (StopWork) and joins its threads. The gRPC server
  // must have shut down first: its streams use the pool.
  ~AggregatorService() override;

  grpc::ServerBidiReactor<v1::WorkerMessage, v1::AggregatorMessage>* Exchange(
      grpc::CallbackServerContext* context) override;

  // For shutdown, before grpc::Server::Shutdown (which waits for every
  // stream to finish): updates still queued in the pool are given up, and
  // their streams end with UNAVAILABLE once their queued answers are
  // written (the workers reconnect and resend); waits for the updates being
  // worked on; any update read later is given up the same way. Idempotent;
  // thread-safe.
  void StopWork() { pool_.Stop(); }

 private:
  JobRegistry* const registry_;
  const TokenStore* const tokens_;
  AggregatorMetrics& metrics_;
  const int64_t max_stream_queue_bytes_;
  MergePool pool_;
};

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_SERVICE_AGGREGATOR_SERVICE_H_
