// Prometheus metrics of the aggregator (docs/DESIGN.md "Metrics"): wire and
// dense-equivalent bytes per direction (bytes saved and the compression ratio
// are PromQL over them), rounds by outcome, round and merge durations, active
// streams, rounds in flight, duplicates, rejects by reason, bytes held.
//
// Families are built once at construction and every label child is created
// there too (label values are fixed enums), so the hot path only increments.
// Thread safety: every method may be called concurrently.
#ifndef ENTROGRAD_AGGREGATOR_METRICS_AGGREGATOR_METRICS_H_
#define ENTROGRAD_AGGREGATOR_METRICS_AGGREGATOR_METRICS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "entrograd/common/metrics_server.h"

namespace prometheus {
class Registry;
class Exposer;
}  // namespace prometheus

namespace entrograd::aggregator {

// How a round ended.
enum class RoundOutcome {
  kCompleted,  // every rank contributed; merged update broadcast
  kAborted,    // round timeout: a rank stopped contributing
  kRejected,   // a contribution held NaN/Inf, or the job failed
};

// Why a message was refused (label `reason` of entrograd_rejects_total).
enum class RejectReason {
  kBadJoin,           // malformed Join (world size, rank, job id)
  kJoinMismatch,      // layer table / parameter hash differs from the job's
  kBeforeJoin,        // update before Join
  kUnknownLayer,      // layer_index outside the layer table
  kNumelMismatch,     // payload numel differs from the layer table
  kBadPayload,        // payload failed to decode (indices, counts, enums)
  kNonFinite,         // NaN or Inf value
  kStaleStep,         // step already merged and released
  kTooFarAhead,       // step beyond the allowed window
  kOversize,          // message larger than the maximum
  kQuota,             // memory quota or job limit reached
  kUnauthenticated,   // no or unknown bearer token
  kPermissionDenied,  // token of another job
  kDuplicateStream,   // same (job, rank, incarnation) already connected
};

// "completed", "aborted", "rejected".
absl::string_view RoundOutcomeLabel(RoundOutcome outcome);
// "bad_join", "join_mismatch", ... (snake_case of the enumerator).
absl::string_view RejectReasonLabel(RejectReason reason);

// Counters ignore negative arguments (a counter never goes down); gauges take
// any value. Durations are in seconds.
class AggregatorMetrics {
 public:
  // Registers every family on `registry` and keeps it alive (shared
  // ownership). Registering twice on one registry shares the same metrics.
  explicit AggregatorMetrics(std::shared_ptr<prometheus::Registry> registry);
  ~AggregatorMetrics();

  AggregatorMetrics(const AggregatorMetrics&) = delete;
  AggregatorMetrics& operator=(const AggregatorMetrics&) = delete;

  // The null metrics object: one process-wide instance whose families live
  // on a registry that no MetricsServer serves, so what it records goes
  // nowhere. Components built without metrics (tests, fuzzers) report to it
  // instead of checking for a null pointer at every call. Never destroyed.
  static AggregatorMetrics& Null();

  // entrograd_uplink_wire_bytes_total / entrograd_uplink_dense_bytes_total:
  // bytes of a received LayerUpdate's payload as sent, and as it would be
  // sent dense float32 (4 * numel).
  void AddUplink(int64_t wire_bytes, int64_t dense_equivalent_bytes);
  // entrograd_downlink_*: the same for each MergedLayer sent to each rank.
  void AddDownlink(int64_t wire_bytes, int64_t dense_equivalent_bytes);
  // entrograd_rounds_total{outcome} and entrograd_round_duration_seconds
  // (first contribution to completion or abort).
  void RoundFinished(RoundOutcome outcome, double seconds);
  // entrograd_merge_duration_seconds: merge plus encode of one round.
  void ObserveMerge(double seconds);
  // entrograd_active_streams, entrograd_rounds_in_flight,
  // entrograd_bytes_held (gauges).
  void SetActiveStreams(int64_t streams);
  void SetRoundsInFlight(int64_t rounds);
  void SetBytesHeld(int64_t bytes);
  // entrograd_duplicate_contributions_total.
  void AddDuplicate();
  // entrograd_rejects_total{reason}.
  void AddReject(RejectReason reason);

 private:
  struct Families;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> families_;
};

// The /metrics HTTP server is shared with the client library.
using ::entrograd::MetricsServer;

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_METRICS_AGGREGATOR_METRICS_H_
