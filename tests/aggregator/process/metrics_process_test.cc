// /metrics of the real binary after a completed round of sparse updates:
// the round is counted, wire and dense-equivalent bytes are exact, and the
// exposition passes `promtool check metrics`.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "aggregator/metrics/promtool_check.h"
#include "aggregator/process/aggregator_process.h"
#include "aggregator/process/process_test_util.h"
#include "aggregator/support/test_worker.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::testing {
namespace {

using ::entrograd::aggregator::testing::PromtoolAvailable;
using ::entrograd::aggregator::testing::PromtoolResult;
using ::entrograd::aggregator::testing::RunPromtoolCheckMetrics;

constexpr uint64_t kNumel = 20000;

class MetricsProcessTest : public ::testing::Test {
 protected:
  // Starts the binary and runs one round of two sparse ranks; remembers the
  // bytes that went over the wire each way.
  void SetUp() override {
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(server_, AggregatorProcess::Start({}));
    auto channel = LoopbackChannel(server_->port());
    const std::vector<SparseVector> ranks = {RandomSparse(kNumel, 150, 7),
                                             RandomSparse(kNumel, 150, 8)};
    std::vector<std::unique_ptr<TestWorker>> workers;
    for (uint32_t rank = 0; rank < 2; ++rank) {
      workers.push_back(std::make_unique<TestWorker>(channel, std::nullopt,
                                                     absl::Seconds(20)));
      JoinSpec spec;
      spec.job_id = "metrics-job";
      spec.rank = rank;
      spec.world_size = 2;
      spec.layers = {{"fc.weight", kNumel}};
      ASSERT_THAT(workers[rank]->Join(MakeJoin(spec)), IsOk());
    }
    for (uint32_t rank = 0; rank < 2; ++rank) {
      EncodedPayload payload = EncodeOrDie(ranks[rank]);
      uplink_wire_ += payload.WireBytes();
      ASSERT_TRUE(workers[rank]->SendUpdate(MakeUpdate(0, 0, payload)));
    }
    const SparseVector expected = ReferenceMerge(ranks);
    for (uint32_t rank = 0; rank < 2; ++rank) {
      absl::StatusOr<v1::AggregatorMessage> message = workers[rank]->Read();
      ASSERT_TRUE(message.ok() && message->has_merged_layer())
          << Describe(message);
      EXPECT_EQ(CompareMerged(message->merged_layer(), expected), "");
      downlink_wire_ += static_cast<int64_t>(
          message->merged_layer().payload().index_bytes().size() +
          message->merged_layer().payload().value_bytes().size());
    }
    for (auto& worker : workers) EXPECT_THAT(worker->Finish(), IsOk());
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(exposition_,
                                   ScrapeMetrics(server_->metrics_port()));
  }

  double Value(const std::string& series) {
    std::optional<double> value = SampleValue(exposition_, series);
    EXPECT_TRUE(value.has_value()) << series << " is missing from\n"
                                   << exposition_;
    return value.value_or(-1);
  }

  std::unique_ptr<AggregatorProcess> server_;
  int64_t uplink_wire_ = 0;
  int64_t downlink_wire_ = 0;
  std::string exposition_;
};

TEST_F(MetricsProcessTest, CountsTheRoundAndItsBytes) {
  EXPECT_GE(Value("entrograd_rounds_total{outcome=\"completed\"}"), 1);
  EXPECT_EQ(Value("entrograd_rounds_total{outcome=\"completed\"}"), 1);
  EXPECT_EQ(Value("entrograd_rounds_total{outcome=\"aborted\"}"), 0);
  EXPECT_EQ(Value("entrograd_rounds_total{outcome=\"rejected\"}"), 0);

  const double uplink_wire = Value("entrograd_uplink_wire_bytes_total");
  const double uplink_dense = Value("entrograd_uplink_dense_bytes_total");
  const double downlink_wire = Value("entrograd_downlink_wire_bytes_total");
  const double downlink_dense = Value("entrograd_downlink_dense_bytes_total");
  EXPECT_GT(uplink_wire, 0);
  EXPECT_GT(downlink_wire, 0);
  // Sparse updates: far fewer bytes on the wire than dense float32.
  EXPECT_GT(uplink_dense, uplink_wire);
  EXPECT_GT(downlink_dense, downlink_wire);
  // Exact: what the two ranks sent / received, and 4 bytes per element.
  EXPECT_EQ(uplink_wire, static_cast<double>(uplink_wire_));
  EXPECT_EQ(downlink_wire, static_cast<double>(downlink_wire_));
  EXPECT_EQ(uplink_dense, 2.0 * 4 * kNumel);
  EXPECT_EQ(downlink_dense, 2.0 * 4 * kNumel);

  EXPECT_EQ(Value("entrograd_round_duration_seconds_count"), 1);
  EXPECT_EQ(Value("entrograd_merge_duration_seconds_count"), 1);
  EXPECT_EQ(Value("entrograd_rounds_in_flight"), 0);
}

TEST_F(MetricsProcessTest, ExpositionPassesPromtool) {
  if (!PromtoolAvailable()) {
    GTEST_SKIP() << "/usr/bin/promtool is not installed (apt-get install "
                    "prometheus): cannot lint the exposition";
  }
  absl::StatusOr<PromtoolResult> result = RunPromtoolCheckMetrics(exposition_);
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(result->exit_code, 0) << result->output << "\n" << exposition_;
}

}  // namespace
}  // namespace entrograd::testing
