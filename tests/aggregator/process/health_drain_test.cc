// grpc.health.v1 of the real binary (no token needed even when tokens are
// required for Exchange) and its SIGTERM drain: health turns NOT_SERVING,
// new Joins are refused, rounds in flight get up to --drain_timeout, the rest
// are aborted, and the process exits 0.
#include <signal.h>
#include <sys/wait.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "aggregator/process/aggregator_process.h"
#include "aggregator/process/process_test_util.h"
#include "aggregator/support/test_worker.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::testing {
namespace {

using ::testing::HasSubstr;
using ServingStatus = ::grpc::health::v1::HealthCheckResponse;

constexpr char kService[] = "entrograd.v1.Aggregator";

// Matches an OK StatusOr<ServingStatus> holding `expected`.
MATCHER_P(HasServingStatus, expected,
          std::string("is OK with ") +
              ServingStatus::ServingStatus_Name(expected)) {
  if (!arg.ok()) {
    *result_listener << "status is " << arg.status();
    return false;
  }
  *result_listener << "serving status is "
                   << ServingStatus::ServingStatus_Name(*arg);
  return *arg == expected;
}

JoinSpec Spec(uint32_t rank, uint32_t world_size = 2,
              const std::string& job = "drain-job") {
  JoinSpec spec;
  spec.job_id = job;
  spec.rank = rank;
  spec.world_size = world_size;
  spec.layers = {{"layer0", 2048}};
  return spec;
}

TEST(HealthProcessTest, ServingWithoutATokenWhileExchangeNeedsOne) {
  ScopedTempDir dir;
  const std::string tokens = dir.WriteFile("tokens", "* shared-token\n");
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<AggregatorProcess> server,
      AggregatorProcess::Start({absl::StrCat("--token_file=", tokens)}));
  auto channel = LoopbackChannel(server->port());

  EXPECT_THAT(CheckHealth(channel, ""),
              HasServingStatus(ServingStatus::SERVING));
  EXPECT_THAT(CheckHealth(channel, kService),
              HasServingStatus(ServingStatus::SERVING));
  EXPECT_THAT(CheckHealth(channel, "no.such.Service"),
              StatusIs(absl::StatusCode::kNotFound, ""));

  // Tokens are enforced on Exchange: health is exempt, not the whole server.
  {
    TestWorker worker(channel, std::nullopt, absl::Seconds(10));
    EXPECT_THAT(worker.Join(MakeJoin(Spec(0, 1))),
                StatusIs(absl::StatusCode::kUnauthenticated, ""));
  }
  {
    TestWorker worker(channel, "shared-token", absl::Seconds(10));
    EXPECT_THAT(worker.Join(MakeJoin(Spec(0, 1))), IsOk());
    EXPECT_THAT(worker.Finish(), IsOk());
  }
}

// Polls health of "" and the service until both are NOT_SERVING or the
// server is gone; returns the time NOT_SERVING was first seen, if ever,
// within `timeout`.
std::optional<absl::Time> AwaitNotServing(
    const std::shared_ptr<grpc::Channel>& channel, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    auto server = CheckHealth(channel, "", absl::Milliseconds(500));
    auto service = CheckHealth(channel, kService, absl::Milliseconds(500));
    if (server.ok() && service.ok() && *server == ServingStatus::NOT_SERVING &&
        *service == ServingStatus::NOT_SERVING) {
      return absl::Now();
    }
    absl::SleepFor(absl::Milliseconds(25));
  }
  return std::nullopt;
}

// How a stream ended after a drain: the contract (aggregator.proto) allows
// OK ("stream closed by ... drain") or UNAVAILABLE ("the shard is draining").
void ExpectDrainEnd(TestWorker& worker, const std::string& who) {
  absl::StatusOr<v1::AggregatorMessage> next = worker.Read();
  ASSERT_FALSE(next.ok()) << who << ": expected the stream to end, got "
                          << Describe(next);
  // TestWorker::Read reports an OK end as OUT_OF_RANGE "stream ended OK".
  const bool ended_ok = next.status().code() == absl::StatusCode::kOutOfRange &&
                        next.status().message() == "stream ended OK";
  EXPECT_TRUE(ended_ok ||
              next.status().code() == absl::StatusCode::kUnavailable)
      << who << ": the stream ended with " << next.status()
      << ", expected OK or UNAVAILABLE (drain)";
}

TEST(DrainProcessTest, SigtermAbortsTheRoundInFlightAfterDrainTimeout) {
  constexpr absl::Duration kDrainTimeout = absl::Seconds(2);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<AggregatorProcess> server,
      AggregatorProcess::Start({"--drain_timeout=2s", "--round_timeout=60s"}));
  auto channel = LoopbackChannel(server->port());
  ASSERT_THAT(CheckHealth(channel, kService),
              HasServingStatus(ServingStatus::SERVING));

  TestWorker rank0(channel, std::nullopt, absl::Seconds(30));
  TestWorker rank1(channel, std::nullopt, absl::Seconds(30));
  ASSERT_THAT(rank0.Join(MakeJoin(Spec(0))), IsOk());
  ASSERT_THAT(rank1.Join(MakeJoin(Spec(1))), IsOk());
  ASSERT_TRUE(rank0.SendUpdate(MakeUpdate(0, 0, EncodeOrDie(RandomSparse(2048, 64, 1)))));
  // The round is in flight once the shard counted it.
  ASSERT_THAT(AwaitSample(server->metrics_port(), "entrograd_rounds_in_flight", 1),
              IsOk());

  const absl::Time sigterm = absl::Now();
  ASSERT_THAT(server->Signal(SIGTERM), IsOk());

  // Health turns NOT_SERVING during the drain, well before it ends.
  std::optional<absl::Time> not_serving = AwaitNotServing(channel, absl::Seconds(1));
  ASSERT_TRUE(not_serving.has_value())
      << "health still SERVING 1 s after SIGTERM (drain_timeout 2 s)";
  EXPECT_LT(*not_serving - sigterm, kDrainTimeout);

  // A new Join during the drain is refused as retryable.
  {
    TestWorker late(channel, std::nullopt, absl::Seconds(5));
    EXPECT_THAT(late.Join(MakeJoin(Spec(0, 1, "late-job"))),
                StatusIs(absl::StatusCode::kUnavailable, ""));
  }

  // The waiting ranks learn that the round was aborted, after the drain
  // gave it its time (or, at least, their stream ends).
  for (TestWorker* worker : {&rank0, &rank1}) {
    const std::string who = worker == &rank0 ? "rank 0" : "rank 1";
    absl::StatusOr<v1::AggregatorMessage> message = worker->Read();
    const absl::Duration after = absl::Now() - sigterm;
    if (message.ok()) {
      ASSERT_TRUE(message->has_round_error()) << who << ": " << Describe(message);
      EXPECT_EQ(message->round_error().code(),
                static_cast<int>(absl::StatusCode::kAborted))
          << who << ": " << Describe(message);
      EXPECT_EQ(message->round_error().step(), 0);
      EXPECT_EQ(message->round_error().layer_index(), 0u);
      EXPECT_GE(after, kDrainTimeout - absl::Milliseconds(300))
          << who << ": aborted before the drain timeout";
      ExpectDrainEnd(*worker, who);
    } else {
      EXPECT_NE(message.status().code(), absl::StatusCode::kDeadlineExceeded)
          << who << ": the stream hung until its deadline";
    }
  }

  absl::StatusOr<int> exit_status =
      server->Wait(kDrainTimeout + absl::Seconds(6) - (absl::Now() - sigterm));
  ASSERT_THAT(exit_status, IsOk()) << "the binary did not exit after the drain";
  EXPECT_TRUE(WIFEXITED(*exit_status) && WEXITSTATUS(*exit_status) == 0)
      << DescribeWaitStatus(*exit_status) << "\nstderr: "
      << server->process().Stderr();
  EXPECT_THAT(server->process().Stdout(), HasSubstr("draining"));
}

TEST(DrainProcessTest, SigtermLetsTheRoundInFlightComplete) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<AggregatorProcess> server,
      AggregatorProcess::Start({"--drain_timeout=20s", "--round_timeout=60s"}));
  auto channel = LoopbackChannel(server->port());
  TestWorker rank0(channel, std::nullopt, absl::Seconds(30));
  TestWorker rank1(channel, std::nullopt, absl::Seconds(30));
  ASSERT_THAT(rank0.Join(MakeJoin(Spec(0))), IsOk());
  ASSERT_THAT(rank1.Join(MakeJoin(Spec(1))), IsOk());
  const std::vector<SparseVector> ranks = {RandomSparse(2048, 100, 5),
                                           RandomSparse(2048, 100, 6)};
  ASSERT_TRUE(rank0.SendUpdate(MakeUpdate(0, 0, EncodeOrDie(ranks[0]))));
  ASSERT_THAT(AwaitSample(server->metrics_port(), "entrograd_rounds_in_flight", 1),
              IsOk());

  const absl::Time sigterm = absl::Now();
  ASSERT_THAT(server->Signal(SIGTERM), IsOk());
  ASSERT_TRUE(AwaitNotServing(channel, absl::Seconds(2)).has_value());

  // The round in flight may still complete: rank 1 contributes on its
  // existing stream and both ranks get the merged update.
  ASSERT_TRUE(rank1.SendUpdate(MakeUpdate(0, 0, EncodeOrDie(ranks[1]))));
  const SparseVector expected = ReferenceMerge(ranks);
  for (TestWorker* worker : {&rank0, &rank1}) {
    absl::StatusOr<v1::AggregatorMessage> message = worker->Read();
    ASSERT_TRUE(message.ok() && message->has_merged_layer())
        << "expected the merged update during the drain, got "
        << Describe(message);
    EXPECT_EQ(CompareMerged(message->merged_layer(), expected), "");
  }
  for (TestWorker* worker : {&rank0, &rank1}) {
    ExpectDrainEnd(*worker, worker == &rank0 ? "rank 0" : "rank 1");
  }

  // Nothing left in flight: the process exits long before the 20 s timeout.
  absl::StatusOr<int> exit_status =
      server->Wait(absl::Seconds(8) - (absl::Now() - sigterm));
  ASSERT_THAT(exit_status, IsOk())
      << "the drain waited although no round was in flight";
  EXPECT_TRUE(WIFEXITED(*exit_status) && WEXITSTATUS(*exit_status) == 0)
      << DescribeWaitStatus(*exit_status);
}

}  // namespace
}  // namespace entrograd::testing
