// One worker's Exchange stream to one aggregator shard, kept alive across
// failures (aggregator.proto, "Nothing lost"):
//
//   connect -> Join (current applied step) -> JoinAck -> resend the kept
//   contributions above ack.merged_step in step order -> write queued
//   updates while a reader thread hands MergedLayers and RoundErrors to the
//   client's MergedInbox -> the stream breaks -> jittered exponential
//   backoff -> connect again ... until the shard makes no progress for
//   `give_up_after` (UNAVAILABLE to every waiter) or a non-retryable status
//   (retry_rules.h) ends it for good.
//
// The give-up clock starts when a stream breaks. A later JoinAck alone does
// not stop it: only progress does (a merged update kept, not a duplicate; a
// JoinAck whose merged_step is above the last one seen) or a stream that
// stayed up for `give_up_after`. So a shard that accepts every Join and then
// drops the stream fails the client instead of being reconnected to forever.
//
// Eviction: a stream ended with ABORTED means another process joined as this
// rank with a newer incarnation; the client reports it (no reconnect, which
// would evict that process in turn).
//
// Limits: an update larger than the shard's JoinAck.max_message_bytes is
// refused by Send. A MergedLayer that breaks the protocol (layer out of
// range or not owned by this shard, step above the highest sent for that
// layer, payload that does not decode to the layer's numel, contributors !=
// world_size) is fatal: the stream is cancelled and every waiter gets
// INTERNAL naming the fault.
//
// A refused update that the protocol allows to retry (OUT_OF_RANGE,
// RESOURCE_EXHAUSTED) is resent after a backoff delay, for at most
// `give_up_after`, then its round fails with that status. RoundErrors for
// steps the worker applied (refused resends, aborted stale rounds rebuilt
// after a shard restart) are ignored.
//
// Threads: the stream's session thread (connects, Joins, writes) and, per
// connection, a reader thread. Every blocking gRPC call is bounded: the
// stream has a lifetime deadline, the Join waits for its JoinAck at most
// `join_timeout`, and Close cancels the call.
//
// Thread safety: Send, BeginClose and FinishClose may be called from any
// thread; Start and AwaitJoined once, from the owner.
#ifndef ENTROGRAD_TRANSPORT_SHARD_STREAM_H_
#define ENTROGRAD_TRANSPORT_SHARD_STREAM_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "entrograd/v1/aggregator.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "transport/backoff.h"
#include "transport/client_state.h"
#include "transport/contribution_store.h"

namespace entrograd {

struct ShardStreamOptions {
  int shard = 0;        // position in the shard list, for messages
  std::string address;  // host:port, for messages
  std::string token;    // bearer token; empty: none
  // Whether this shard owns each layer (by layer index), per the shard map.
  std::vector<bool> owned_layers;
  BackoffPolicy backoff;
  // No progress this long after the stream broke: fail for good.
  absl::Duration give_up_after = absl::Seconds(120);
  // Longest wait for a JoinAck after opening a stream.
  absl::Duration join_timeout = absl::Seconds(60);
  // Deadline of one stream; a stream that reaches it is simply reopened.
  absl::Duration stream_lifetime = absl::Hours(24);
  uint64_t seed = 0;  // jitter
};

class ShardStream {
 public:
  // `state` must outlive the stream.
  ShardStream(ShardStreamOptions options,
              std::shared_ptr<grpc::Channel> channel, ClientState* state);
  // Closes (at once) if still open.
  ~ShardStream();

  ShardStream(const ShardStream&) = delete;
  ShardStream& operator=(const ShardStream&) = delete;

  // Starts the session thread, which connects and Joins; the first Join
  // must be acknowledged by `join_deadline`.
  void Start(absl::Time join_deadline);
  // Blocks until the first JoinAck (OK), or returns why none came: the
  // shard's refusal (e.g. FAILED_PRECONDITION), UNAVAILABLE (unreachable
  // until the deadline) or DEADLINE_EXCEEDED (no answer).
  absl::Status AwaitJoined();

  // Keeps the contribution for resends and queues it for writing (or for
  // the resend after the next JoinAck while disconnected). Errors:
  // FAILED_PRECONDITION when (step, layer) was already sent;
  // RESOURCE_EXHAUSTED when the message is larger than the shard's
  // JoinAck.max_message_bytes. On error nothing is kept or sent.
  absl::Status Send(int64_t step, uint32_t layer,
                    std::shared_ptr<const v1::WorkerMessage> message);

  // Stops reconnecting and half-closes the stream; returns at once. The
  // session gets until `graceful_deadline` for the shard to end the stream.
  void BeginClose(absl::Time graceful_deadline);
  // Waits for the graceful end until the deadline given to BeginClose, then
  // cancels the call, and joins the threads. Idempotent.
  void FinishClose();

  int shard() const { return options_.shard; }

 private:
  using Stream =
      grpc::ClientReaderWriter<v1::WorkerMessage, v1::AggregatorMessage>;
  using RoundKey = std::pair<int64_t, uint32_t>;  // (step, layer)

  // One try at a stream: its call and what its reader thread saw.
  struct Connection {
    std::shared_ptr<grpc::ClientContext> context;
    std::unique_ptr<Stream> stream;  // set by the reader thread
  };
  struct ConnectionEnd {
    absl::Status status;  // the stream's final status
    bool joined = false;  // a JoinAck came
    // Rounds progressed on this connection (see the give-up clock above).
    bool progressed = false;
    // The shard broke the protocol (`status` says how): not retried.
    bool protocol_fault = false;
  };
  // A refused contribution waiting to be resent.
  struct Refusal {
    absl::Time first_refused;
    absl::Time due;
    int attempts = 0;
    bool scheduled = false;
  };

  void Run();
  ConnectionEnd RunConnection(absl::Time ack_deadline);
  void ReadLoop(Connection* connection);
  // Cancels the call unless its reader already saw the stream end.
  void CancelUnlessEnded(grpc::ClientContext* context);
  // Writes queued updates and due retries until the reader ends, the
  // stream is closing or a write fails (returns false).
  bool WriteLoop(Stream* stream);
  bool WriteUpdate(Stream* stream, const v1::WorkerMessage& message);
  // Returns why `merged` breaks the protocol, or OK.
  absl::Status CheckMergedLayer(const v1::MergedLayer& merged) const;
  // Returns false (and ends the stream for good) on a protocol fault.
  bool HandleMergedLayer(const v1::MergedLayer& merged);
  // The fatal status of a stream ended by `end` that is not retried.
  absl::Status FatalEnd(const absl::Status& end) const;
  void HandleRoundError(const v1::RoundError& error);
  std::shared_ptr<const v1::WorkerMessage> TakeDueRetryLocked(absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  absl::Time NextRetryDueLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  void ResolveStart(absl::Status status);
  bool Stopping();
  std::string Name() const;

  const ShardStreamOptions options_;
  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<v1::Aggregator::Stub> stub_;
  ClientState* const state_;

  absl::Mutex mutex_;
  absl::CondVar changed_;
  absl::Time join_deadline_ ABSL_GUARDED_BY(mutex_);
  std::optional<absl::Status> start_status_ ABSL_GUARDED_BY(mutex_);
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  absl::Time graceful_deadline_ ABSL_GUARDED_BY(mutex_);
  bool session_done_ ABSL_GUARDED_BY(mutex_) = false;
  // The call in progress (null between connections), for cancelling.
  std::shared_ptr<grpc::ClientContext> context_ ABSL_GUARDED_BY(mutex_);
  // Of the current connection.
  std::optional<v1::JoinAck> ack_ ABSL_GUARDED_BY(mutex_);
  bool reader_done_ ABSL_GUARDED_BY(mutex_) = false;
  bool joined_ ABSL_GUARDED_BY(mutex_) = false;
  int64_t joins_ ABSL_GUARDED_BY(mutex_) = 0;
  // The shard's limit from the last JoinAck; 0: none announced.
  uint64_t shard_max_message_bytes_ ABSL_GUARDED_BY(mutex_) = 0;
  // Highest JoinAck.merged_step seen, and MergedLayers kept so far.
  int64_t highest_acked_step_ ABSL_GUARDED_BY(mutex_) = -1;
  int64_t merged_received_ ABSL_GUARDED_BY(mutex_) = 0;
  // Highest step sent per layer index (-1: none): merged updates above it
  // were never asked for.
  std::vector<int64_t> highest_sent_step_ ABSL_GUARDED_BY(mutex_);
  // Set by the reader on a protocol fault: the stream ends for good.
  std::optional<absl::Status> protocol_fault_ ABSL_GUARDED_BY(mutex_);
  // Contributions kept for resends, and those still to be written.
  ContributionStore store_ ABSL_GUARDED_BY(mutex_);
  std::deque<std::shared_ptr<const v1::WorkerMessage>> queue_
      ABSL_GUARDED_BY(mutex_);
  std::map<RoundKey, Refusal> refusals_ ABSL_GUARDED_BY(mutex_);
  std::mt19937_64 rng_ ABSL_GUARDED_BY(mutex_);

  std::thread session_;
};

}  // namespace entrograd

#endif  // ENTROGRAD_TRANSPORT_SHARD_STREAM_H_
