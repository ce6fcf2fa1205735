// MetricsServer over real HTTP: start on 127.0.0.1:0, scrape /metrics with a
// socket client, check the samples and lint them with promtool.
#include <memory>
#include <string>
#include <vector>

#include "aggregator/metrics/aggregator_metrics.h"
#include "exposition_lines.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "http_get.h"
#include "prometheus/registry.h"
#include "promtool_check.h"
#include "support/status_matchers.h"

namespace entrograd::aggregator {
namespace {

using ::entrograd::aggregator::testing::HttpGet;
using ::entrograd::aggregator::testing::HttpResponse;
using ::entrograd::aggregator::testing::Lines;
using ::entrograd::aggregator::testing::PromtoolAvailable;
using ::entrograd::aggregator::testing::PromtoolResult;
using ::entrograd::aggregator::testing::RunPromtoolCheckMetrics;
using ::entrograd::testing::StatusIs;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Ne;

constexpr char kLoopback[] = "127.0.0.1";

// Scrapes /metrics of a server on the loopback, asserting HTTP 200.
std::string Scrape(int port) {
  absl::StatusOr<HttpResponse> response = HttpGet(kLoopback, port, "/metrics");
  EXPECT_THAT(response, entrograd::testing::IsOk());
  if (!response.ok()) return "";
  EXPECT_EQ(response->status_code, 200) << response->headers;
  return response->body;
}

// Exercises every method so every family has a non-trivial value.
void UpdateAll(AggregatorMetrics& metrics) {
  metrics.AddUplink(1234, 40000);
  metrics.AddDownlink(567, 80000);
  metrics.RoundFinished(RoundOutcome::kCompleted, 0.02);
  metrics.RoundFinished(RoundOutcome::kAborted, 30.0);
  metrics.ObserveMerge(0.0005);
  metrics.SetActiveStreams(4);
  metrics.SetRoundsInFlight(2);
  metrics.SetBytesHeld(65536);
  metrics.AddDuplicate();
  metrics.AddReject(RejectReason::kStaleStep);
}

TEST(MetricsServerTest, ServesUpdatedMetricsOverHttp) {
  auto registry = std::make_shared<prometheus::Registry>();
  AggregatorMetrics metrics(registry);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsServer> server,
                                 MetricsServer::Start("127.0.0.1:0", registry));
  ASSERT_GT(server->port(), 0);
  UpdateAll(metrics);

  const std::string text = Scrape(server->port());
  const std::vector<std::string> lines = Lines(text);
  EXPECT_THAT(lines, Contains("entrograd_uplink_wire_bytes_total 1234"));
  EXPECT_THAT(lines, Contains("entrograd_uplink_dense_bytes_total 40000"));
  EXPECT_THAT(lines, Contains("entrograd_downlink_wire_bytes_total 567"));
  EXPECT_THAT(lines, Contains("entrograd_downlink_dense_bytes_total 80000"));
  EXPECT_THAT(lines,
              Contains("entrograd_rounds_total{outcome=\"completed\"} 1"));
  EXPECT_THAT(lines, Contains("entrograd_rounds_total{outcome=\"aborted\"} 1"));
  EXPECT_THAT(lines,
              Contains("entrograd_rounds_total{outcome=\"rejected\"} 0"));
  EXPECT_THAT(lines, Contains("entrograd_round_duration_seconds_count 2"));
  EXPECT_THAT(lines, Contains("entrograd_round_duration_seconds_sum 30.02"));
  EXPECT_THAT(lines, Contains("entrograd_merge_duration_seconds_count 1"));
  EXPECT_THAT(lines, Contains("entrograd_active_streams 4"));
  EXPECT_THAT(lines, Contains("entrograd_rounds_in_flight 2"));
  EXPECT_THAT(lines, Contains("entrograd_bytes_held 65536"));
  EXPECT_THAT(lines, Contains("entrograd_duplicate_contributions_total 1"));
  EXPECT_THAT(lines,
              Contains("entrograd_rejects_total{reason=\"stale_step\"} 1"));
  for (const char* reason :
       {"bad_join", "join_mismatch", "before_join", "unknown_layer",
        "numel_mismatch", "bad_payload", "non_finite", "too_far_ahead",
        "oversize", "quota", "unauthenticated", "permission_denied",
        "duplicate_stream"}) {
    EXPECT_THAT(lines,
                Contains(std::string("entrograd_rejects_total{reason=\"") +
                         reason + "\"} 0"));
  }
}

TEST(MetricsServerTest, LaterUpdatesShowInLaterScrapes) {
  auto registry = std::make_shared<prometheus::Registry>();
  AggregatorMetrics metrics(registry);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsServer> server,
                                 MetricsServer::Start("127.0.0.1:0", registry));
  EXPECT_THAT(Lines(Scrape(server->port())),
              Contains("entrograd_active_streams 0"));
  metrics.SetActiveStreams(9);
  EXPECT_THAT(Lines(Scrape(server->port())),
              Contains("entrograd_active_streams 9"));
}

TEST(MetricsServerTest, ScrapedTextPassesPromtool) {
  if (!PromtoolAvailable()) {
    GTEST_SKIP() << testing::kPromtoolPath
                 << " not found (Debian package `prometheus`, installed by the "
                    "setup script); cannot lint the exposition";
  }
  auto registry = std::make_shared<prometheus::Registry>();
  AggregatorMetrics metrics(registry);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsServer> server,
                                 MetricsServer::Start("127.0.0.1:0", registry));
  UpdateAll(metrics);
  const std::string text = Scrape(server->port());
  ASSERT_THAT(text, HasSubstr("entrograd_rejects_total"));

  ENTROGRAD_ASSERT_OK_AND_ASSIGN(PromtoolResult result,
                                 RunPromtoolCheckMetrics(text));
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, IsEmpty()) << "lint warnings";
}

// The promtool check above is not vacuous: promtool flags a counter without
// the _total suffix.
TEST(MetricsServerTest, PromtoolFlagsABadlyNamedCounter) {
  if (!PromtoolAvailable()) {
    GTEST_SKIP() << testing::kPromtoolPath << " not found";
  }
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      PromtoolResult result,
      RunPromtoolCheckMetrics("# HELP entrograd_bad_bytes Bad name.\n"
                              "# TYPE entrograd_bad_bytes counter\n"
                              "entrograd_bad_bytes 1\n"));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("_total"));
}

TEST(MetricsServerTest, MalformedAddressIsInvalidArgument) {
  auto registry = std::make_shared<prometheus::Registry>();
  for (const char* address :
       {"", "127.0.0.1", "127.0.0.1:", ":9090", "localhost:0",
        "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:80s", "127.0.0.1:0,9090",
        "999.0.0.1:0", "::1:0", "[::1:0", "[nonsense]:0"}) {
    EXPECT_THAT(MetricsServer::Start(address, registry),
                StatusIs(absl::StatusCode::kInvalidArgument, ""))
        << address;
  }
}

// A bracketed IPv6 literal is well formed; whether it binds depends on the
// civetweb build (Debian 12's has no IPv6), so only INVALID_ARGUMENT is wrong.
TEST(MetricsServerTest, Ipv6LiteralIsAcceptedOrUnavailable) {
  auto registry = std::make_shared<prometheus::Registry>();
  absl::StatusOr<std::unique_ptr<MetricsServer>> server =
      MetricsServer::Start("[::1]:0", registry);
  if (server.ok()) {
    EXPECT_GT((*server)->port(), 0);
  } else {
    EXPECT_THAT(server, StatusIs(absl::StatusCode::kUnavailable, "[::1]:0"));
  }
}

TEST(MetricsServerTest, NullRegistryIsInvalidArgument) {
  EXPECT_THAT(MetricsServer::Start("127.0.0.1:0", nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, "registry"));
}

TEST(MetricsServerTest, PortInUseIsUnavailable) {
  auto registry = std::make_shared<prometheus::Registry>();
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsServer> first,
                                 MetricsServer::Start("127.0.0.1:0", registry));
  EXPECT_THAT(MetricsServer::Start("127.0.0.1:" + std::to_string(first->port()),
                                   registry),
              StatusIs(absl::StatusCode::kUnavailable, "127.0.0.1"));
}

TEST(MetricsServerTest, NonLocalAddressIsUnavailable) {
  // TEST-NET-1 (RFC 5737): never assigned to a local interface.
  auto registry = std::make_shared<prometheus::Registry>();
  EXPECT_THAT(MetricsServer::Start("192.0.2.1:0", registry),
              StatusIs(absl::StatusCode::kUnavailable, "192.0.2.1"));
}

TEST(MetricsServerTest, TwoServersOnPortZeroGetDifferentPorts) {
  auto registry = std::make_shared<prometheus::Registry>();
  AggregatorMetrics metrics(registry);
  metrics.AddDuplicate();
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsServer> first,
                                 MetricsServer::Start("127.0.0.1:0", registry));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsServer> second,
                                 MetricsServer::Start("127.0.0.1:0", registry));
  EXPECT_GT(first->port(), 0);
  EXPECT_GT(second->port(), 0);
  EXPECT_THAT(first->port(), Ne(second->port()));
  for (int port : {first->port(), second->port()}) {
    EXPECT_THAT(Lines(Scrape(port)),
                Contains("entrograd_duplicate_contributions_total 1"));
  }
}

TEST(MetricsServerTest, ServerKeepsRegistryAlive) {
  auto registry = std::make_shared<prometheus::Registry>();
  auto metrics = std::make_unique<AggregatorMetrics>(registry);
  metrics->SetBytesHeld(77);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsServer> server,
                                 MetricsServer::Start("127.0.0.1:0", registry));
  metrics.reset();
  registry.reset();
  EXPECT_THAT(Lines(Scrape(server->port())),
              Contains("entrograd_bytes_held 77"));
}

TEST(MetricsServerTest, PortIsClosedAfterDestruction) {
  auto registry = std::make_shared<prometheus::Registry>();
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsServer> server,
                                 MetricsServer::Start("127.0.0.1:0", registry));
  const int port = server->port();
  server.reset();
  EXPECT_THAT(HttpGet(kLoopback, port, "/metrics"),
              StatusIs(absl::StatusCode::kUnavailable, "connect"));
}

TEST(MetricsServerTest, UnknownPathIsNotFound) {
  auto registry = std::make_shared<prometheus::Registry>();
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsServer> server,
                                 MetricsServer::Start("127.0.0.1:0", registry));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(HttpResponse response,
                                 HttpGet(kLoopback, server->port(), "/nope"));
  EXPECT_EQ(response.status_code, 404);
}

}  // namespace
}  // namespace entrograd::aggregator
