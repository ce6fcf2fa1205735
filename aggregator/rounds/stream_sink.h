// The registry's view of one worker stream: where merged layers and round
// errors for that rank go. Implemented by the gRPC reactor (and by fakes in
// tests), so the round logic needs no gRPC.
#ifndef ENTROGRAD_AGGREGATOR_ROUNDS_STREAM_SINK_H_
#define ENTROGRAD_AGGREGATOR_ROUNDS_STREAM_SINK_H_

#include <memory>

#include "absl/status/status.h"
#include "entrograd/v1/aggregator.pb.h"

namespace entrograd::aggregator {

class StreamSink {
 public:
  virtual ~StreamSink() = default;
  // Queues `message` for the worker. Never blocks on the network; messages
  // arrive in the order queued. A sink whose stream has ended drops the
  // message. Called without registry locks held, except for the JoinAck,
  // which JobRegistry::Join queues under its lock so that it comes first: so
  // Send must never call back into the registry.
  virtual void Send(std::shared_ptr<const v1::AggregatorMessage> message) = 0;
  // Ends the stream with `status` once queued messages are written (e.g. the
  // rank was replaced by a newer incarnation).
  virtual void Close(const absl::Status& status) = 0;
};

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_ROUNDS_STREAM_SINK_H_
