// The StreamSink of one ExchangeReactor: a queue of outgoing messages with
// at most one write in flight (the callback API allows one), and the single
// Finish of the stream once the queue drains. Shared between the reactor and
// the registry; after the reactor is done, Send and Close do nothing.
//
// The sink finishes its stream exactly once on every path, a failed write
// included: gRPC runs the reactor's OnDone (and so the registry's Leave, and
// server shutdown) only after Finish.
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

// The two stream operations the sink drives: ServerBidiReactor's StartWrite
// and Finish, behind an interface so the sink's ordering can be tested
// without a network. gRPC allows at most one write in flight and one Finish,
// with no write pending; the sink keeps both rules.
class StreamWriter {
 public:
  virtual ~StreamWriter() = default;
  // Starts writing `message`, which stays alive until WriteDone.
  virtual void StartMessageWrite(const v1::AggregatorMessage* message) = 0;
  // Ends the stream with `status`.
  virtual void FinishStream(const grpc::Status& status) = 0;
};

class ReactorSink : public StreamSink {
 public:
  // `writer` must stay valid until Detach.
  explicit ReactorSink(StreamWriter* writer) : writer_(writer) {}

  void Send(std::shared_ptr<const v1::AggregatorMessage> message) override;
  void Close(const absl::Status& status) override;

  // From the reactor's OnWriteDone: the front message is written.
  void WriteDone(bool ok);
  // From the reactor's OnDone: the reactor is gone.
  void Detach();

 private:
  absl::Mutex mutex_;
  StreamWriter* writer_ ABSL_GUARDED_BY(mutex_);
  std::deque<std::shared_ptr<const v1::AggregatorMessage>> queue_
      ABSL_GUARDED_BY(mutex_);
  bool writing_ ABSL_GUARDED_BY(mutex_) = false;
  bool finished_ ABSL_GUARDED_BY(mutex_) = false;
  std::optional<grpc::Status> finish_after_writes_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_SERVICE_REACTOR_SINK_H_
