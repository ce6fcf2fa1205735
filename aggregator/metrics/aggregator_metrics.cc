// AggregatorMetrics: every family and every label child is built in the
// constructor; the methods only touch cached metric references.
#include "aggregator/metrics/aggregator_metrics.h"

#include <array>
#include <cstddef>
#include <utility>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace entrograd::aggregator {
namespace {

constexpr std::array<RoundOutcome, 3> kAllRoundOutcomes = {
    RoundOutcome::kCompleted, RoundOutcome::kAborted, RoundOutcome::kRejected};

constexpr std::array<RejectReason, 14> kAllRejectReasons = {
    RejectReason::kBadJoin,
    RejectReason::kJoinMismatch,
    RejectReason::kBeforeJoin,
    RejectReason::kUnknownLayer,
    RejectReason::kNumelMismatch,
    RejectReason::kBadPayload,
    RejectReason::kNonFinite,
    RejectReason::kStaleStep,
    RejectReason::kTooFarAhead,
    RejectReason::kOversize,
    RejectReason::kQuota,
    RejectReason::kUnauthenticated,
    RejectReason::kPermissionDenied,
    RejectReason::kDuplicateStream,
};

// The arrays below are indexed by enumerator value: they must list every one.
static_assert(static_cast<std::size_t>(RoundOutcome::kRejected) + 1 ==
              kAllRoundOutcomes.size());
static_assert(static_cast<std::size_t>(RejectReason::kDuplicateStream) + 1 ==
              kAllRejectReasons.size());

// `count` upper bounds start, start * factor, start * factor^2, ...
prometheus::Histogram::BucketBoundaries ExponentialBuckets(double start,
                                                           double factor,
                                                           int count) {
  prometheus::Histogram::BucketBoundaries bounds;
  bounds.reserve(count);
  double bound = start;
  for (int i = 0; i < count; ++i) {
    bounds.push_back(bound);
    bound *= factor;
  }
  return bounds;
}

// Round duration: 100us .. ~105s in powers of two (covers the 60s timeout).
prometheus::Histogram::BucketBoundaries RoundDurationBuckets() {
  return ExponentialBuckets(100e-6, 2.0, 21);
}

// Merge plus encode of one round: 10us .. ~10.5s in powers of two.
prometheus::Histogram::BucketBoundaries MergeDurationBuckets() {
  return ExponentialBuckets(10e-6, 2.0, 21);
}

prometheus::Counter& BuildCounter(prometheus::Registry& registry,
                                  const std::string& name,
                                  const std::string& help) {
  return prometheus::BuildCounter()
      .Name(name)
      .Help(help)
      .Register(registry)
      .Add({});
}

prometheus::Gauge& BuildGauge(prometheus::Registry& registry,
                              const std::string& name,
                              const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry).Add(
      {});
}

// Counters only go up: negative increments are dropped (prometheus-cpp
// ignores them too; the check makes the contract explicit).
void IncrementBy(prometheus::Counter& counter, int64_t amount) {
  if (amount > 0) counter.Increment(static_cast<double>(amount));
}

}  // namespace

absl::string_view RoundOutcomeLabel(RoundOutcome outcome) {
  switch (outcome) {
    case RoundOutcome::kCompleted:
      return "completed";
    case RoundOutcome::kAborted:
      return "aborted";
    case RoundOutcome::kRejected:
      return "rejected";
  }
  return "unknown";
}

absl::string_view RejectReasonLabel(RejectReason reason) {
  switch (reason) {
    case RejectReason::kBadJoin:
      return "bad_join";
    case RejectReason::kJoinMismatch:
      return "join_mismatch";
    case RejectReason::kBeforeJoin:
      return "before_join";
    case RejectReason::kUnknownLayer:
      return "unknown_layer";
    case RejectReason::kNumelMismatch:
      return "numel_mismatch";
    case RejectReason::kBadPayload:
      return "bad_payload";
    case RejectReason::kNonFinite:
      return "non_finite";
    case RejectReason::kStaleStep:
      return "stale_step";
    case RejectReason::kTooFarAhead:
      return "too_far_ahead";
    case RejectReason::kOversize:
      return "oversize";
    case RejectReason::kQuota:
      return "quota";
    case RejectReason::kUnauthenticated:
      return "unauthenticated";
    case RejectReason::kPermissionDenied:
      return "permission_denied";
    case RejectReason::kDuplicateStream:
      return "duplicate_stream";
  }
  return "unknown";
}

// Cached references into `registry_`'s families; the registry owns them and
// outlives this struct (AggregatorMetrics holds it).
struct AggregatorMetrics::Families {
  explicit Families(prometheus::Registry& registry)
      : uplink_wire_bytes(BuildCounter(
            registry, "entrograd_uplink_wire_bytes_total",
            "Bytes of LayerUpdate payloads received from workers, as sent on "
            "the wire.")),
        uplink_dense_bytes(BuildCounter(
            registry, "entrograd_uplink_dense_bytes_total",
            "Bytes the received LayerUpdate payloads would take as dense "
            "float32 (4 * numel).")),
        downlink_wire_bytes(BuildCounter(
            registry, "entrograd_downlink_wire_bytes_total",
            "Bytes of MergedLayer payloads sent to workers, as sent on the "
            "wire (counted once per receiving rank).")),
        downlink_dense_bytes(BuildCounter(
            registry, "entrograd_downlink_dense_bytes_total",
            "Bytes the sent MergedLayer payloads would take as dense float32 "
            "(4 * numel, counted once per receiving rank).")),
        round_duration(
            prometheus::BuildHistogram()
                .Name("entrograd_round_duration_seconds")
                .Help("Seconds from a round's first contribution to its "
                      "completion or abort.")
                .Register(registry)
                .Add({}, RoundDurationBuckets())),
        merge_duration(prometheus::BuildHistogram()
                           .Name("entrograd_merge_duration_seconds")
                           .Help("Seconds spent merging and encoding one "
                                 "completed round.")
                           .Register(registry)
                           .Add({}, MergeDurationBuckets())),
        active_streams(BuildGauge(registry, "entrograd_active_streams",
                                  "Exchange streams currently open.")),
        rounds_in_flight(
            BuildGauge(registry, "entrograd_rounds_in_flight",
                       "Rounds (job, step, layer) holding contributions and "
                       "not yet completed or aborted.")),
        bytes_held(BuildGauge(registry, "entrograd_bytes_held",
                              "Bytes of contributions held by rounds in "
                              "flight (counted against the memory quota).")),
        duplicates(BuildCounter(
            registry, "entrograd_duplicate_contributions_total",
            "Contributions dropped because the same (job, step, layer, rank, "
            "incarnation) was already received.")) {
    auto& rounds_family =
        prometheus::BuildCounter()
            .Name("entrograd_rounds_total")
            .Help(
                "Rounds finished, by outcome (completed, aborted on "
                "timeout, rejected on bad input).")
            .Register(registry);
    for (RoundOutcome outcome : kAllRoundOutcomes) {
      rounds[static_cast<std::size_t>(outcome)] = &rounds_family.Add(
          {{"outcome", std::string(RoundOutcomeLabel(outcome))}});
    }
    auto& rejects_family =
        prometheus::BuildCounter()
            .Name("entrograd_rejects_total")
            .Help("Messages refused with an error status, by reason.")
            .Register(registry);
    for (RejectReason reason : kAllRejectReasons) {
      rejects[static_cast<std::size_t>(reason)] = &rejects_family.Add(
          {{"reason", std::string(RejectReasonLabel(reason))}});
    }
  }

  prometheus::Counter& uplink_wire_bytes;
  prometheus::Counter& uplink_dense_bytes;
  prometheus::Counter& downlink_wire_bytes;
  prometheus::Counter& downlink_dense_bytes;
  prometheus::Histogram& round_duration;
  prometheus::Histogram& merge_duration;
  prometheus::Gauge& active_streams;
  prometheus::Gauge& rounds_in_flight;
  prometheus::Gauge& bytes_held;
  prometheus::Counter& duplicates;
  // Indexed by the enumerator's value; every entry set by the constructor.
  std::array<prometheus::Counter*, kAllRoundOutcomes.size()> rounds{};
  std::array<prometheus::Counter*, kAllRejectReasons.size()> rejects{};
};

AggregatorMetrics::AggregatorMetrics(
    std::shared_ptr<prometheus::Registry> registry)
    : registry_(std::move(registry)),
      families_(std::make_unique<Families>(*registry_)) {}

AggregatorMetrics::~AggregatorMetrics() = default;

AggregatorMetrics& AggregatorMetrics::Null() {
  // Leaked on purpose: reachable from threads that outlive static
  // destruction (a merge pool finishing while the process exits).
  static AggregatorMetrics* const null_metrics =
      new AggregatorMetrics(std::make_shared<prometheus::Registry>());
  return *null_metrics;
}

void AggregatorMetrics::AddUplink(int64_t wire_bytes,
                                  int64_t dense_equivalent_bytes) {
  IncrementBy(families_->uplink_wire_bytes, wire_bytes);
  IncrementBy(families_->uplink_dense_bytes, dense_equivalent_bytes);
}

void AggregatorMetrics::AddDownlink(int64_t wire_bytes,
                                    int64_t dense_equivalent_bytes) {
  IncrementBy(families_->downlink_wire_bytes, wire_bytes);
  IncrementBy(families_->downlink_dense_bytes, dense_equivalent_bytes);
}

void AggregatorMetrics::RoundFinished(RoundOutcome outcome, double seconds) {
  const auto index = static_cast<std::size_t>(outcome);
  if (index >= families_->rounds.size()) return;
  families_->rounds[index]->Increment();
  families_->round_duration.Observe(seconds);
}

void AggregatorMetrics::ObserveMerge(double seconds) {
  families_->merge_duration.Observe(seconds);
}

void AggregatorMetrics::SetActiveStreams(int64_t streams) {
  families_->active_streams.Set(static_cast<double>(streams));
}

void AggregatorMetrics::SetRoundsInFlight(int64_t rounds) {
  families_->rounds_in_flight.Set(static_cast<double>(rounds));
}

void AggregatorMetrics::SetBytesHeld(int64_t bytes) {
  families_->bytes_held.Set(static_cast<double>(bytes));
}

void AggregatorMetrics::AddDuplicate() { families_->duplicates.Increment(); }

void AggregatorMetrics::AddReject(RejectReason reason) {
  const auto index = static_cast<std::size_t>(reason);
  if (index >= families_->rejects.size()) return;
  families_->rejects[index]->Increment();
}

}  // namespace entrograd::aggregator
