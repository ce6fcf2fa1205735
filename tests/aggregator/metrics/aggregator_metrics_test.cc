// AggregatorMetrics without HTTP: label names, families and values as
// serialized from the registry.
#include "aggregator/metrics/aggregator_metrics.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "exposition_lines.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace entrograd::aggregator {
namespace {

using ::entrograd::aggregator::testing::Lines;
using ::entrograd::aggregator::testing::Serialize;
using ::testing::Contains;
using ::testing::Not;

struct ReasonName {
  RejectReason reason;
  const char* label;
};

// Every RejectReason with its expected label, written out independently of
// the implementation.
const std::vector<ReasonName>& AllReasons() {
  static const auto* reasons = new std::vector<ReasonName>{
      {RejectReason::kBadJoin, "bad_join"},
      {RejectReason::kJoinMismatch, "join_mismatch"},
      {RejectReason::kBeforeJoin, "before_join"},
      {RejectReason::kUnknownLayer, "unknown_layer"},
      {RejectReason::kNumelMismatch, "numel_mismatch"},
      {RejectReason::kBadPayload, "bad_payload"},
      {RejectReason::kNonFinite, "non_finite"},
      {RejectReason::kStaleStep, "stale_step"},
      {RejectReason::kTooFarAhead, "too_far_ahead"},
      {RejectReason::kOversize, "oversize"},
      {RejectReason::kQuota, "quota"},
      {RejectReason::kUnauthenticated, "unauthenticated"},
      {RejectReason::kPermissionDenied, "permission_denied"},
      {RejectReason::kDuplicateStream, "duplicate_stream"},
  };
  return *reasons;
}

TEST(LabelTest, RoundOutcomeLabels) {
  EXPECT_EQ(RoundOutcomeLabel(RoundOutcome::kCompleted), "completed");
  EXPECT_EQ(RoundOutcomeLabel(RoundOutcome::kAborted), "aborted");
  EXPECT_EQ(RoundOutcomeLabel(RoundOutcome::kRejected), "rejected");
}

TEST(LabelTest, RejectReasonLabelsAreSnakeCaseOfEnumerator) {
  for (const ReasonName& reason : AllReasons()) {
    EXPECT_EQ(RejectReasonLabel(reason.reason), reason.label);
  }
}

TEST(AggregatorMetricsTest, EveryFamilyHasHelpAndType) {
  auto registry = std::make_shared<prometheus::Registry>();
  AggregatorMetrics metrics(registry);
  const std::vector<std::string> lines = Lines(Serialize(*registry));
  const std::vector<std::pair<std::string, std::string>> families = {
      {"entrograd_uplink_wire_bytes_total", "counter"},
      {"entrograd_uplink_dense_bytes_total", "counter"},
      {"entrograd_downlink_wire_bytes_total", "counter"},
      {"entrograd_downlink_dense_bytes_total", "counter"},
      {"entrograd_rounds_total", "counter"},
      {"entrograd_round_duration_seconds", "histogram"},
      {"entrograd_merge_duration_seconds", "histogram"},
      {"entrograd_active_streams", "gauge"},
      {"entrograd_rounds_in_flight", "gauge"},
      {"entrograd_bytes_held", "gauge"},
      {"entrograd_duplicate_contributions_total", "counter"},
      {"entrograd_rejects_total", "counter"},
  };
  for (const auto& [name, type] : families) {
    EXPECT_THAT(lines, Contains("# TYPE " + name + " " + type));
    EXPECT_THAT(lines, Contains(::testing::StartsWith("# HELP " + name + " ")))
        << name;
  }
}

TEST(AggregatorMetricsTest, LabelChildrenExistBeforeFirstUse) {
  auto registry = std::make_shared<prometheus::Registry>();
  AggregatorMetrics metrics(registry);
  const std::vector<std::string> lines = Lines(Serialize(*registry));
  for (const char* outcome : {"completed", "aborted", "rejected"}) {
    EXPECT_THAT(lines,
                Contains(std::string("entrograd_rounds_total{outcome=\"") +
                         outcome + "\"} 0"));
  }
  for (const ReasonName& reason : AllReasons()) {
    EXPECT_THAT(lines,
                Contains(std::string("entrograd_rejects_total{reason=\"") +
                         reason.label + "\"} 0"));
  }
  EXPECT_THAT(lines, Contains("entrograd_round_duration_seconds_count 0"));
  EXPECT_THAT(lines, Contains("entrograd_merge_duration_seconds_count 0"));
}

TEST(AggregatorMetricsTest, HistogramBucketsSpanTheirRanges) {
  auto registry = std::make_shared<prometheus::Registry>();
  AggregatorMetrics metrics(registry);
  const std::vector<std::string> lines = Lines(Serialize(*registry));
  // Round: 100us first bound, 60s inside the last finite bucket.
  EXPECT_THAT(
      lines,
      Contains("entrograd_round_duration_seconds_bucket{le=\"0.0001\"} 0"));
  EXPECT_THAT(
      lines,
      Contains("entrograd_round_duration_seconds_bucket{le=\"104.8576\"} 0"));
  // Merge: 10us first bound, 10s inside the last finite bucket.
  EXPECT_THAT(
      lines,
      Contains("entrograd_merge_duration_seconds_bucket{le=\"1e-05\"} 0"));
  EXPECT_THAT(
      lines,
      Contains("entrograd_merge_duration_seconds_bucket{le=\"10.48576\"} 0"));
}

TEST(AggregatorMetricsTest, MethodsUpdateTheirSamples) {
  auto registry = std::make_shared<prometheus::Registry>();
  AggregatorMetrics metrics(registry);
  metrics.AddUplink(100, 400);
  metrics.AddUplink(20, 80);
  metrics.AddDownlink(7, 4000);
  metrics.RoundFinished(RoundOutcome::kCompleted, 0.25);
  metrics.RoundFinished(RoundOutcome::kCompleted, 0.5);
  metrics.RoundFinished(RoundOutcome::kRejected, 1.0);
  metrics.ObserveMerge(0.001);
  metrics.SetActiveStreams(8);
  metrics.SetRoundsInFlight(3);
  metrics.SetBytesHeld(1 << 20);
  metrics.SetActiveStreams(6);  // gauges go down too
  metrics.AddDuplicate();
  metrics.AddReject(RejectReason::kNonFinite);
  metrics.AddReject(RejectReason::kNonFinite);
  metrics.AddReject(RejectReason::kDuplicateStream);

  const std::vector<std::string> lines = Lines(Serialize(*registry));
  EXPECT_THAT(lines, Contains("entrograd_uplink_wire_bytes_total 120"));
  EXPECT_THAT(lines, Contains("entrograd_uplink_dense_bytes_total 480"));
  EXPECT_THAT(lines, Contains("entrograd_downlink_wire_bytes_total 7"));
  EXPECT_THAT(lines, Contains("entrograd_downlink_dense_bytes_total 4000"));
  EXPECT_THAT(lines,
              Contains("entrograd_rounds_total{outcome=\"completed\"} 2"));
  EXPECT_THAT(lines, Contains("entrograd_rounds_total{outcome=\"aborted\"} 0"));
  EXPECT_THAT(lines,
              Contains("entrograd_rounds_total{outcome=\"rejected\"} 1"));
  EXPECT_THAT(lines, Contains("entrograd_round_duration_seconds_count 3"));
  EXPECT_THAT(lines, Contains("entrograd_round_duration_seconds_sum 1.75"));
  EXPECT_THAT(
      lines,
      Contains("entrograd_round_duration_seconds_bucket{le=\"+Inf\"} 3"));
  EXPECT_THAT(lines, Contains("entrograd_merge_duration_seconds_count 1"));
  EXPECT_THAT(lines, Contains("entrograd_active_streams 6"));
  EXPECT_THAT(lines, Contains("entrograd_rounds_in_flight 3"));
  EXPECT_THAT(lines, Contains("entrograd_bytes_held 1048576"));
  EXPECT_THAT(lines, Contains("entrograd_duplicate_contributions_total 1"));
  EXPECT_THAT(lines,
              Contains("entrograd_rejects_total{reason=\"non_finite\"} 2"));
  EXPECT_THAT(
      lines,
      Contains("entrograd_rejects_total{reason=\"duplicate_stream\"} 1"));
  EXPECT_THAT(lines,
              Contains("entrograd_rejects_total{reason=\"bad_join\"} 0"));
}

TEST(AggregatorMetricsTest, CountersIgnoreNegativeAmounts) {
  auto registry = std::make_shared<prometheus::Registry>();
  AggregatorMetrics metrics(registry);
  metrics.AddUplink(10, 40);
  metrics.AddUplink(-5, -20);
  metrics.AddDownlink(-1, 0);
  const std::vector<std::string> lines = Lines(Serialize(*registry));
  EXPECT_THAT(lines, Contains("entrograd_uplink_wire_bytes_total 10"));
  EXPECT_THAT(lines, Contains("entrograd_uplink_dense_bytes_total 40"));
  EXPECT_THAT(lines, Contains("entrograd_downlink_wire_bytes_total 0"));
}

TEST(AggregatorMetricsTest, TwoInstancesOnOneRegistryShareMetrics) {
  auto registry = std::make_shared<prometheus::Registry>();
  AggregatorMetrics first(registry);
  AggregatorMetrics second(registry);
  first.AddDuplicate();
  second.AddDuplicate();
  const std::vector<std::string> lines = Lines(Serialize(*registry));
  EXPECT_THAT(lines, Contains("entrograd_duplicate_contributions_total 2"));
  EXPECT_THAT(lines,
              Not(Contains("entrograd_duplicate_contributions_total 1")));
}

TEST(AggregatorMetricsTest, ConcurrentUpdatesAreAllCounted) {
  auto registry = std::make_shared<prometheus::Registry>();
  AggregatorMetrics metrics(registry);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 10000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&metrics] {
      for (int i = 0; i < kPerThread; ++i) {
        metrics.AddUplink(1, 4);
        metrics.AddReject(RejectReason::kQuota);
        metrics.ObserveMerge(1e-4);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const std::vector<std::string> lines = Lines(Serialize(*registry));
  EXPECT_THAT(lines, Contains("entrograd_uplink_wire_bytes_total 40000"));
  EXPECT_THAT(lines, Contains("entrograd_uplink_dense_bytes_total 160000"));
  EXPECT_THAT(lines,
              Contains("entrograd_rejects_total{reason=\"quota\"} 40000"));
  EXPECT_THAT(lines, Contains("entrograd_merge_duration_seconds_count 40000"));
}

}  // namespace
}  // namespace entrograd::aggregator
