// The worker's /metrics endpoint, scraped for real over HTTP and checked by
// promtool.
#include "entrograd/client_metrics.h"

#include "aggregator/metrics/http_get.h"
#include "aggregator/metrics/promtool_check.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd {
namespace {

using ::entrograd::aggregator::testing::HttpGet;
using ::entrograd::aggregator::testing::PromtoolAvailable;
using ::entrograd::aggregator::testing::RunPromtoolCheckMetrics;
using ::testing::HasSubstr;

TEST(ClientMetricsTest, ServesTrafficCompressAndLayerSeries) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto metrics, ClientMetrics::Start({"127.0.0.1:0", "job-a", 3, true}));
  ClientTraffic traffic;
  traffic.uplink_wire_bytes = 1000;
  traffic.uplink_dense_bytes = 400000;
  traffic.downlink_wire_bytes = 1500;
  traffic.downlink_dense_bytes = 400000;
  traffic.reconnects = 1;
  metrics->UpdateTraffic(traffic);
  traffic.uplink_wire_bytes = 2500;  // cumulative: adds 1500
  metrics->UpdateTraffic(traffic);
  metrics->ObserveCompress(0.002);
  metrics->ObserveLayer("conv1.weight", 4.5, 0.004);

  auto response = HttpGet("127.0.0.1", metrics->port(), "/metrics");
  ASSERT_TRUE(response.ok()) << response.status();
  const std::string* body = &response->body;
  EXPECT_THAT(*body, HasSubstr(
      "entrograd_client_uplink_wire_bytes_total{job=\"job-a\",rank=\"3\"} 2500"));
  EXPECT_THAT(*body, HasSubstr(
      "entrograd_client_downlink_dense_bytes_total{job=\"job-a\",rank=\"3\"} 400000"));
  EXPECT_THAT(*body, HasSubstr(
      "entrograd_client_reconnects_total{job=\"job-a\",rank=\"3\"} 1"));
  EXPECT_THAT(*body, HasSubstr(
      "entrograd_client_compress_duration_seconds_count{job=\"job-a\",rank=\"3\"} 1"));
  EXPECT_THAT(*body, HasSubstr(
      "entrograd_client_layer_entropy_nats{job=\"job-a\",layer=\"conv1.weight\",rank=\"3\"} 4.5"));
  EXPECT_THAT(*body, HasSubstr("entrograd_client_layer_keep_ratio{"));
  if (!PromtoolAvailable()) GTEST_SKIP() << "promtool not installed (apt-get install prometheus)";
  auto lint = RunPromtoolCheckMetrics(*body);
  ASSERT_TRUE(lint.ok()) << lint.status();
  EXPECT_EQ(lint->exit_code, 0) << lint->output;
  EXPECT_EQ(lint->output, "");
}

TEST(ClientMetricsTest, PerLayerSeriesAreOptIn) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto metrics, ClientMetrics::Start({"127.0.0.1:0", "job-b", 0, false}));
  metrics->ObserveLayer("fc.weight", 3.0, 0.01);
  auto response = HttpGet("127.0.0.1", metrics->port(), "/metrics");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_THAT(response->body, ::testing::Not(HasSubstr("fc.weight")));
}

TEST(ClientMetricsTest, BadAddressIsRefused) {
  EXPECT_THAT(ClientMetrics::Start({"nonsense", "job", 0, false}),
              ::entrograd::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                             "nonsense"));
}

}  // namespace
}  // namespace entrograd
