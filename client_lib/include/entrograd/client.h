// entrograd::Client: a training worker's connection to the aggregator shards
// (docs/DESIGN.md "Semantics that must hold"). One bidirectional Exchange stream
// per shard; each layer (or each part of a large one, see
// ClientOptions::partition_bytes) goes to the shard the ShardMap picks for
// (job, layer). Layers are sent as soon as they are compressed and merged layers
// are received as they arrive, so communication overlaps the backward pass.
//
// Nothing lost: the client keeps each layer's last two contributions. When a
// stream breaks it reconnects with jittered exponential backoff, Joins again
// (same incarnation, its applied step), and resends what it keeps; the shard
// answers resends it no longer needs with FAILED_PRECONDITION, which the
// client ignores for steps already applied. A merged update for a step the
// worker applied is dropped, so each is delivered to the caller once.
//
// Failure is loud and bounded: a RoundError (e.g. ABORTED because a rank
// died) makes WaitMerged of that round return that status. A shard that
// makes no progress for `reconnect_give_up_after` after its stream broke
// (UNAVAILABLE; a Join it accepts is no progress, a merged update is), a
// stream ended with a non-retryable status (e.g. ABORTED "taken over by
// another process" when a newer incarnation of this rank joined: two
// workers share a rank; UNAUTHENTICATED), or a merged update that breaks
// the protocol (INTERNAL: layer not owned by that shard, step never sent,
// wrong numel or contributors) is fatal for the whole client: every
// pending and later WaitMerged returns it (merged updates already received
// are still returned) and SendLayer returns FAILED_PRECONDITION naming it.
// WaitMerged never hangs past `merge_timeout`. Refusals the protocol allows
// to retry (OUT_OF_RANGE: step too far ahead; RESOURCE_EXHAUSTED: the
// shard's memory quota) are resent with backoff for up to
// `reconnect_give_up_after` before they fail the round.
//
// Thread safety: every method is thread-safe. SendLayer may be called from
// several threads (e.g. autograd hooks) at once.
#ifndef ENTROGRAD_CLIENT_H_
#define ENTROGRAD_CLIENT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "entrograd/codec.h"

namespace entrograd {

struct ClientOptions {
  // Aggregator shard addresses (host:port), in the order every worker of the
  // job uses. Required.
  std::vector<std::string> shards;
  // Job identity: [A-Za-z0-9._-]{1,128}; 0 <= rank < world_size.
  std::string job_id;
  uint32_t rank = 0;
  uint32_t world_size = 1;
  // Bumped by the caller on every process (re)start, e.g. the wall-clock
  // time in microseconds. A newer incarnation replaces an older stream.
  uint64_t incarnation = 1;
  // The last step this worker applied before this process started (from a
  // checkpoint), -1 for a fresh run.
  int64_t applied_step = -1;
  // Bearer token sent as "authorization: Bearer <token>"; empty: none.
  std::string token;
  // TLS: PEM root certificates to trust; empty: plaintext. Optional client
  // certificate and key (PEM) for mTLS.
  std::string tls_root_certs;
  std::string tls_client_cert;
  std::string tls_client_key;
  // Value type of uplink payloads. kF32 is exact; kF16/kBF16 halve the value
  // bytes, kE5M2 quarters them; all three round and saturate (counted in
  // metrics). A round every rank sent in one type comes back in that type.
  ValueType value_type = ValueType::kF32;
  // Whether payloads may travel in the gap_range index encoding (range-coded
  // gaps; codec.h), both ways: uplink payloads use it where it is the
  // smallest, and the Join tells the shards this worker decodes it, so that
  // merged updates use it where every rank does. False: only the encodings
  // that predate it (for a shard that predates it, or to measure what it
  // saves). The values, and so training, are the same either way.
  bool gap_range_indices = true;
  // How long WaitMerged waits for one merged layer before DEADLINE_EXCEEDED.
  absl::Duration merge_timeout = absl::Seconds(120);
  // Reconnect backoff: first delay, cap, and the random jitter fraction
  // (0.2 = +-20%).
  absl::Duration reconnect_initial_backoff = absl::Milliseconds(100);
  absl::Duration reconnect_max_backoff = absl::Seconds(5);
  double reconnect_jitter = 0.2;
  // A shard unreachable, or reconnected but without progress (no new
  // merged update), this long from when its stream broke fails pending and
  // future waits with UNAVAILABLE. Also bounds how long a refused update
  // (OUT_OF_RANGE, RESOURCE_EXHAUSTED) is retried.
  absl::Duration reconnect_give_up_after = absl::Seconds(120);
  // HTTP/2 keepalive ping interval and timeout.
  absl::Duration keepalive_time = absl::Seconds(20);
  absl::Duration keepalive_timeout = absl::Seconds(10);
  // Largest message sent, bytes. Each shard's own limit (its JoinAck) also
  // bounds what is sent to it; what a shard sends is accepted whatever size.
  int64_t max_message_bytes = int64_t{256} << 20;
  // Layers of more than this many float32 bytes travel as parts of at most
  // this size, as BytePS partitions large tensors. Each part is a layer of
  // its own on the wire (named "<layer>#<i>/<k>" in the Join), with its own
  // round on the shard the shard map picks for it, so one large layer
  // spreads its bytes and its merge over every shard. The caller still sees
  // whole layers, and the merged values are bitwise those of the whole
  // layer's merge (the merge is element by element). Compression is not
  // affected: parts are cut after it. 0: never cut; otherwise >= 4.
  int64_t partition_bytes = int64_t{4} << 20;
};

// One layer of the model, as the Join's layer table carries it.
struct LayerSpecification {
  std::string name;
  uint64_t numel = 0;
};

// Whether `factor` is a merged_keep_factor the protocol accepts: 0 (the
// whole union) or a finite number in [1, 1e6] (the shard's rule,
// entrograd.v1.LayerUpdate.merged_keep_factor). False for NaN.
inline bool IsValidMergedKeepFactor(double factor) {
  return factor == 0.0 || (factor >= 1.0 && factor <= 1e6);
}

// What a worker sends for one layer of one step (from CompressedLayer).
struct LayerContribution {
  int64_t step = 0;
  uint32_t layer = 0;
  uint64_t numel = 0;
  bool dense = false;
  std::vector<uint32_t> indices;  // ascending; empty when dense
  std::vector<float> values;      // at indices, or all numel when dense
  double entropy = 0.0;
  double keep_ratio = 0.0;
  // Global top-k (docs/ALGORITHM.md step 6, variant): 0 takes the whole
  // union back; c in [1, 1e6] asks the shard for only the
  // ceil(c * largest contribution's count) merged entries of largest
  // |value|. Entries this rank sent that the merged update does not carry
  // were not applied: the caller keeps them (DistributedOptimizer puts them
  // back into the residual).
  double merged_keep_factor = 0.0;
};

// A merged layer as received.
struct MergedLayerUpdate {
  int64_t step = 0;
  uint32_t layer = 0;
  DecodedPayload payload;  // validated; ScatterInto writes it into a buffer
  int64_t wire_bytes = 0;  // index + value bytes as received
};

// Byte counters of this client (the metrics are PromQL over the same).
struct ClientTraffic {
  int64_t uplink_wire_bytes = 0;     // payload bytes sent (resends included)
  int64_t uplink_dense_bytes = 0;    // 4 * numel per layer sent
  int64_t downlink_wire_bytes = 0;   // payload bytes received
  int64_t downlink_dense_bytes = 0;  // 4 * numel per merged layer received
  int64_t reconnects = 0;
  int64_t saturated_values = 0;  // narrow values clipped to max finite
};

class Client {
 public:
  // Validates the options, connects to every shard and Joins with the layer
  // table and the hash of the initial parameters. Blocks until every shard
  // acknowledged (or `join_timeout` passed); a shard not up yet, or one that
  // still holds this rank's previous stream (ALREADY_EXISTS), is retried
  // with the reconnect backoff until then. `join_timeout` also bounds each
  // later re-Join's wait for its JoinAck. Errors: INVALID_ARGUMENT (bad
  // options or layer table, naming the field); the shard's Join status
  // (FAILED_PRECONDITION when replicas disagree on layers or initial
  // parameters, naming the difference and both hashes; UNAUTHENTICATED,
  // PERMISSION_DENIED, ...); UNAVAILABLE (a shard unreachable until the
  // timeout) / DEADLINE_EXCEEDED (connected but no JoinAck). The returned
  // client owns its threads and connections; destroying it closes it.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(
      ClientOptions options, std::vector<LayerSpecification> layers,
      uint64_t initial_params_hash,
      absl::Duration join_timeout = absl::Seconds(60));

  virtual ~Client() = default;

  // Encodes and queues the contribution for its shard; returns without
  // waiting for the network (while the shard is unreachable it is kept and
  // sent after the reconnect). Keeps it for resends until the step after
  // next is sent. On error nothing is sent or kept. Errors:
  // INVALID_ARGUMENT (unknown layer, numel mismatch, negative step,
  // indices/values inconsistent or not strictly ascending, an index >=
  // numel, NaN/Inf, a merged_keep_factor neither 0 nor in [1, 1e6]);
  // FAILED_PRECONDITION when the step is already applied,
  // when this (step, layer) was already sent, after Close, or after a fatal
  // error (its status is in the message); RESOURCE_EXHAUSTED when the
  // encoded update exceeds `max_message_bytes` or the limit its shard
  // announced (the message names the layer, the size and the limit).
  virtual absl::Status SendLayer(LayerContribution contribution) = 0;

  // Blocks until the merged update of (step, layer) arrives, then returns
  // it (once). May be called before or after SendLayer of that round.
  // Errors: ABORTED / INVALID_ARGUMENT / ... from a RoundError of that
  // round; DEADLINE_EXCEEDED after merge_timeout (the round stays waited
  // for: a later call may still get it); UNAVAILABLE when the shard is lost
  // for good; any fatal error of the client; CANCELLED once Close was
  // called; INTERNAL when the shard sent a malformed merged update;
  // FAILED_PRECONDITION when this round's outcome was already returned or
  // its step is applied (MarkApplied); INVALID_ARGUMENT for an unknown
  // layer or a negative step.
  virtual absl::StatusOr<MergedLayerUpdate> WaitMerged(int64_t step,
                                                       uint32_t layer) = 0;

  // Records that every layer of `step` was applied: sent with the next
  // updates (and Joins) so shards can free merged updates, and merged
  // updates (and round errors) of steps <= it are dropped. Never lowers the
  // watermark. Local only: nothing is sent until the next update or Join.
  virtual void MarkApplied(int64_t step) = 0;

  // A snapshot of the byte counters (each counter read on its own). Uplink
  // bytes are counted when an update is handed to gRPC, resends included;
  // downlink bytes for every merged update received, duplicates included.
  virtual ClientTraffic traffic() const = 0;

  // The type SendLayer's values travel in (ClientOptions::value_type): the
  // aggregator receives RoundToValueType(value_type(), v) of each value v.
  virtual ValueType value_type() const = 0;

  // Closes every stream (half-close, waits up to a second for the shards,
  // then cancels) and joins the client's threads; never blocks longer, even
  // with a dead shard. Pending WaitMerged calls return CANCELLED. Idempotent.
  virtual void Close() = 0;
};

// FNV-1a 64 over the little-endian float32 bytes of each span in order: the
// Join's initial_params_hash, and a cheap way to compare replicas.
uint64_t HashParameters(absl::Span<const absl::Span<const float>> parameters);

}  // namespace entrograd

#endif  // ENTROGRAD_CLIENT_H_
