// The StreamSink of one ExchangeReactor: a queue of outgoing messages with
// at most one write in flight (the callback API allows one), and the single
// Finish of the stream once the queue drains. Shared between the reactor and
// the registry; after the reactor is done, Send and Close do nothing.
//
// The sink finishes its stream exactly once on every path, a failed write
// included: gRPC runs the reactor's OnDone (and so the registry's Leave, and
// server shutdown) only after Finish.
//
// The queue is bounded in bytes (the messages' encoded sizes, the one being
// written included). A Send that would take it past the bound means the
// worker reads slower than its rounds complete (or does not read at all):
// the queued messages are dropped and the stream is ended with
// RESOURCE_EXHAUSTED once the write in flight is done. The worker reconnects
// and resends; the shard answers it again from what it keeps. One message is
// always accepted into an empty queue, so a bound below max_message_bytes
// cannot end every stream.
//
// Holds: while the stream's work on a message it read is queued or running
// (MergePool), the session holds the sink, and the sink does not finish the
// stream: a Close, a slow reader's end or a failed write waits, as behind a
// write in flight, until the last hold is released. gRPC runs OnDone (which
// deletes the reactor) only after Finish, so the holder may start the next
// read from a pool thread, outside any reactor callback, without the reactor
// being deleted under it.
//
// Thread safety: all methods are thread-safe.
#ifndef ENTROGRAD_AGGREGATOR_SERVICE_REACTOR_SINK_H_
#define ENTROGRAD_AGGREGATOR_SERVICE_REACTOR_SINK_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "aggregator/rounds/stream_sink.h"
#include "entrograd/v1/aggregator.pb.h"

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
  // Ends the stream with `status` (its StreamEndReason payload included,
  // entrograd/wire/grpc_status.h).
  virtual void FinishStream(const absl::Status& status) = 0;
};

class ReactorSink : public StreamSink {
 public:
  // `writer` must stay valid until Detach. `max_queued_bytes` bounds the
  // queue (see above); it must be positive.
  ReactorSink(StreamWriter* writer, int64_t max_queued_bytes)
      : writer_(writer), max_queued_bytes_(max_queued_bytes) {}

  void Send(std::shared_ptr<const v1::AggregatorMessage> message) override;
  void Close(const absl::Status& status) override;

  // From the reactor's OnWriteDone: the front message is written.
  void WriteDone(bool ok);
  // Keeps the stream from finishing until the matching Release (see
  // "Holds" above). Holds nest.
  void Hold();
  // Ends a Hold; the last one finishes the stream when a finish waits and no
  // write is in flight. The sink may call the writer's FinishStream, after
  // which the reactor may be gone: touch nothing of it after Release.
  void Release();
  // Whether the stream is ending: closed, finished, or waiting to finish.
  // Reading on from a closing stream is pointless.
  bool Closing();
  // From the reactor's OnDone: the reactor is gone.
  void Detach();

  // Default bound for a shard whose largest message is `max_message_bytes`:
  // a few of the largest messages, so a reader a little behind never hits it.
  static int64_t DefaultMaxQueuedBytes(int64_t max_message_bytes) {
    return 4 * max_message_bytes;
  }

 private:
  absl::Mutex mutex_;
  // Drops the queue but the write in flight and sets the RESOURCE_EXHAUSTED
  // finish for a Send of `refused_bytes` that did not fit.
  void EndSlowReaderLocked(int64_t refused_bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // The status to finish the stream with now, when a finish waits and
  // neither a write nor a hold is out (and marks the stream finished); else
  // nullopt.
  std::optional<absl::Status> TakeFinishLocked()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  StreamWriter* writer_ ABSL_GUARDED_BY(mutex_);
  std::deque<std::shared_ptr<const v1::AggregatorMessage>> queue_
      ABSL_GUARDED_BY(mutex_);
  const int64_t max_queued_bytes_;
  // The encoded size of each message in queue_, and their sum.
  std::deque<int64_t> sizes_ ABSL_GUARDED_BY(mutex_);
  int64_t queued_bytes_ ABSL_GUARDED_BY(mutex_) = 0;
  bool writing_ ABSL_GUARDED_BY(mutex_) = false;
  int holds_ ABSL_GUARDED_BY(mutex_) = 0;
  bool finished_ ABSL_GUARDED_BY(mutex_) = false;
  std::optional<absl::Status> finish_after_writes_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_SERVICE_REACTOR_SINK_H_
