// The protocol of one Exchange stream, apart from gRPC: the first message
// must be a Join, which is handled at once (it is cheap, and its JoinAck
// must come first); every LayerUpdate after it goes to the MergePool, where
// the registry decodes it and, when it completes its round, merges and
// encodes the round. The session starts the stream's next read only when
// that work is done: a stream whose update waits in the pool is not read,
// which bounds what each stream has queued to one message and slows a
// worker down to what the pool can take.
//
// ExchangeReactor (one per stream) owns a session and forwards its read
// callbacks to it; the session reaches the stream through StreamReader and
// the ReactorSink, so its ordering can be tested without a network.
//
// Thread safety: Start, OnReadDone and End come from the reactor, one at a
// time (gRPC runs a stream's read callbacks one at a time; End comes from
// OnDone, after every other callback). The pool task runs on a pool thread
// while no read is pending; it holds the sink (ReactorSink::Hold) until its
// last step, so the stream cannot finish, and the reactor cannot be
// deleted, under it.
#ifndef ENTROGRAD_AGGREGATOR_SERVICE_EXCHANGE_SESSION_H_
#define ENTROGRAD_AGGREGATOR_SERVICE_EXCHANGE_SESSION_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "aggregator/metrics/aggregator_metrics.h"
#include "aggregator/rounds/job_registry.h"
#include "aggregator/service/merge_pool.h"
#include "aggregator/service/reactor_sink.h"
#include "entrograd/v1/aggregator.pb.h"

namespace entrograd::aggregator {

// The read half of a stream: ServerBidiReactor's StartRead, behind an
// interface as StreamWriter is for the write half.
class StreamReader {
 public:
  virtual ~StreamReader() = default;
  // Starts reading the next message into `message`, which stays alive until
  // the read completes; the reactor then calls ExchangeSession::OnReadDone.
  virtual void StartMessageRead(v1::WorkerMessage* message) = 0;
};

class ExchangeSession {
 public:
  // Borrows `reader`, `registry`, `pool` and `metrics`: the reader lives as
  // long as the session, the rest as long as the server. Shares `sink` with
  // the registry.
  ExchangeSession(StreamReader* reader, std::shared_ptr<ReactorSink> sink,
                  JobRegistry* registry, MergePool* pool,
                  AggregatorMetrics& metrics);

  ExchangeSession(const ExchangeSession&) = delete;
  ExchangeSession& operator=(const ExchangeSession&) = delete;

  // Starts the first read. `authorized_job`, when set, is the only job the
  // stream's token grants (JobRegistry::Join).
  void Start(std::optional<std::string> authorized_job);

  // The read started last completed: `ok` false when the worker half-closed
  // or the stream broke. Handles the message, and starts the next read now
  // (after a Join) or when the pool has done the update's work; ends the
  // stream on a protocol error.
  void OnReadDone(bool ok);

  // The stream is done (the reactor's OnDone): the member leaves the
  // registry. Nothing else may be called after.
  void End();

 private:
  // Each returns whether to read on.
  bool HandleJoin(const v1::Join& join);
  // Hands the update in request_ to the pool; the task reads on.
  void HandleLayerUpdate();
  // The pool task for the update in request_: `pool_status` is OK to do its
  // work, UNAVAILABLE when the pool is stopping.
  void RunUpdate(absl::Status pool_status);
  // Contributes the update; a refusal becomes a RoundError for this worker.
  void Contribute(const v1::LayerUpdate& update);

  StreamReader* const reader_;
  const std::shared_ptr<ReactorSink> sink_;
  JobRegistry* const registry_;
  MergePool* const pool_;
  AggregatorMetrics& metrics_;
  std::optional<std::string> authorized_job_;
  // Set by the Join; read by the pool task (no Join is handled while it
  // runs: nothing is read meanwhile).
  std::optional<MemberId> member_;
  // The message being read or worked on; never both at once.
  v1::WorkerMessage request_;
};

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_SERVICE_EXCHANGE_SESSION_H_
