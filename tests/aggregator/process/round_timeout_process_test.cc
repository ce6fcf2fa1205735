// A worker that stops: rank 1 joined but never contributes. With
// --round_timeout=1s the round is aborted for every rank with ABORTED naming
// rank 1, in about a second, instead of hanging.
#include <memory>
#include <string>
#include <vector>

#include "aggregator/process/aggregator_process.h"
#include "aggregator/process/process_test_util.h"
#include "aggregator/support/test_worker.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::testing {
namespace {

using ::testing::ContainsRegex;

JoinSpec Spec(uint32_t rank) {
  JoinSpec spec;
  spec.job_id = "stalled-job";
  spec.rank = rank;
  spec.world_size = 2;
  spec.layers = {{"layer0", 1024}, {"layer1", 1024}};
  return spec;
}

TEST(RoundTimeoutProcessTest, SilentRankAbortsTheRoundNamingIt) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<AggregatorProcess> server,
      AggregatorProcess::Start({"--round_timeout=1s"}));
  auto channel = LoopbackChannel(server->port());
  TestWorker rank0(channel, std::nullopt, absl::Seconds(20));
  TestWorker rank1(channel, std::nullopt, absl::Seconds(20));
  ASSERT_THAT(rank0.Join(MakeJoin(Spec(0))), IsOk());
  ASSERT_THAT(rank1.Join(MakeJoin(Spec(1))), IsOk());

  const absl::Time sent = absl::Now();
  ASSERT_TRUE(rank0.SendUpdate(MakeUpdate(0, 1, EncodeOrDie(RandomSparse(1024, 40, 3)))));

  for (TestWorker* worker : {&rank0, &rank1}) {
    const std::string who = worker == &rank0 ? "rank 0 (contributed)"
                                             : "rank 1 (silent)";
    absl::StatusOr<v1::AggregatorMessage> message = worker->Read();
    const absl::Duration waited = absl::Now() - sent;
    ASSERT_TRUE(message.ok() && message->has_round_error())
        << who << ": expected a RoundError, got " << Describe(message);
    const v1::RoundError& error = message->round_error();
    EXPECT_EQ(error.code(), static_cast<int>(absl::StatusCode::kAborted))
        << who << ": " << Describe(message);
    EXPECT_EQ(error.step(), 0);
    EXPECT_EQ(error.layer_index(), 1u);
    // Names the missing rank (and only it: rank 0 did contribute).
    EXPECT_THAT(error.message(), ContainsRegex("rank(\\(s\\))? 1([^0-9]|$)"))
        << who << ": " << error.message();
    EXPECT_LT(waited, absl::Seconds(10)) << who << ": took too long";
    EXPECT_GE(waited, absl::Milliseconds(900))
        << who << ": aborted before the 1 s round timeout";
  }
  EXPECT_THAT(AwaitSample(server->metrics_port(),
                          "entrograd_rounds_total{outcome=\"aborted\"}", 1),
              IsOk());

  // The streams stay open: another round (layer 0) still completes.
  const std::vector<SparseVector> ranks = {RandomSparse(1024, 40, 4),
                                           RandomSparse(1024, 40, 5)};
  ASSERT_TRUE(rank0.SendUpdate(MakeUpdate(0, 0, EncodeOrDie(ranks[0]))));
  ASSERT_TRUE(rank1.SendUpdate(MakeUpdate(0, 0, EncodeOrDie(ranks[1]))));
  for (TestWorker* worker : {&rank0, &rank1}) {
    absl::StatusOr<v1::AggregatorMessage> merged = worker->Read();
    ASSERT_TRUE(merged.ok() && merged->has_merged_layer()) << Describe(merged);
    EXPECT_EQ(merged->merged_layer().layer_index(), 0u);
    EXPECT_EQ(CompareMerged(merged->merged_layer(), ReferenceMerge(ranks)), "");
  }
  EXPECT_THAT(rank0.Finish(), IsOk());
  EXPECT_THAT(rank1.Finish(), IsOk());
}

}  // namespace
}  // namespace entrograd::testing
