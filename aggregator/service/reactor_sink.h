// The StreamSink of one ExchangeReactor: a queue of outgoing messages with
// at most one write in flight (the callback API allows one), and the single
// Finish of the stream once the queue drains. Shared between the reactor and
// the registry; after the reactor is done, Send and Close do nothing.
//
// Thread safety: all methods are thread-safe.
#ifndef ENTROGRAD_AGGREGATOR_SERVICE_REACTOR_SINK_H_
#define ENTROGRAD_AGGREGATOR_SERVICE_REACTOR_SINK_H_

#include <deque>
#include <memory>
#include <optional>

#include "absl/synchronization/mutex.h"
#include "aggregator/rounds/stream_sink.h"
#include "entrograd/v1/aggregator.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace entrograd::aggregator {

class ReactorSink : public StreamSink {
 public:
  using Reactor =
      grpc::ServerBidiReactor<v1::WorkerMessage, v1::AggregatorMessage>;

  explicit ReactorSink(Reactor* reactor) : reactor_(reactor) {}

  void Send(std::shared_ptr<const v1::AggregatorMessage> message) override;
  void Close(const absl::Status& status) override;

  // From the reactor's OnWriteDone: the front message is written.
  void WriteDone(bool ok);
  // From the reactor's OnDone: the reactor is gone.
  void Detach();

 private:
  absl::Mutex mutex_;
  Reactor* reactor_ ABSL_GUARDED_BY(mutex_);
  std::deque<std::shared_ptr<const v1::AggregatorMessage>> queue_
      ABSL_GUARDED_BY(mutex_);
  bool writing_ ABSL_GUARDED_BY(mutex_) = false;
  bool finished_ ABSL_GUARDED_BY(mutex_) = false;
  std::optional<grpc::Status> finish_after_writes_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_SERVICE_REACTOR_SINK_H_
