// Failure is loud and bounded: a rank that stops aborts the round for the
// others within the round timeout; a shard that never comes back fails the
// waits with UNAVAILABLE; Close and Connect never hang.
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "client_lib/transport/client_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/refusing_listener.h"
#include "support/status_matchers.h"
#include "support/thread_state.h"
#include "support/wait_for.h"

namespace entrograd::testing {
namespace {

using ::testing::HasSubstr;

constexpr uint32_t kWorld = 3;

class StoppedRankTest : public ::testing::TestWithParam<bool> {};

// Rank 2 either closes its client or stays connected but never sends.
TEST_P(StoppedRankTest, OthersGetAbortedWithinTheRoundTimeout) {
  const bool close_it = GetParam();
  Shards shards(1, /*round_timeout=*/absl::Milliseconds(500));
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerSpecification> layers = TestLayers(2);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::vector<std::unique_ptr<Client>> clients,
                                 ConnectRanks(shards, "stop", kWorld, layers, 7));
  // Step 0 completes for everyone.
  std::vector<WorkerRun> runs(kWorld);
  std::vector<std::thread> threads;
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    threads.emplace_back(
        [&, rank] { runs[rank] = RunWorker(*clients[rank], rank, 1, layers); });
  }
  for (auto& thread : threads) thread.join();
  for (const WorkerRun& run : runs) ENTROGRAD_ASSERT_OK(run.status);

  if (close_it) clients[2]->Close();
  const absl::Time start = absl::Now();
  for (uint32_t rank = 0; rank < 2; ++rank) {
    for (uint32_t l = 0; l < layers.size(); ++l) {
      ENTROGRAD_ASSERT_OK(clients[rank]->SendLayer(
          MakeContribution(rank, 1, l, layers[l].numel)));
    }
  }
  for (uint32_t rank = 0; rank < 2; ++rank) {
    for (uint32_t l = 0; l < layers.size(); ++l) {
      EXPECT_THAT(clients[rank]->WaitMerged(1, l),
                  StatusIs(absl::StatusCode::kAborted,
                           "no contribution from rank(s) 2"));
    }
  }
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  if (!close_it) {
    // The silent rank hears about it too.
    EXPECT_THAT(clients[2]->WaitMerged(1, 0),
                StatusIs(absl::StatusCode::kAborted, "rank(s) 2"));
  }
}

INSTANTIATE_TEST_SUITE_P(ClosedOrSilent, StoppedRankTest, ::testing::Bool());

TEST(ClientFailuresTest, ShardThatNeverComesBackFailsWaitsWithUnavailable) {
  Shards shards(1);
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerSpecification> layers = TestLayers(1);
  ClientOptions options = TestOptions(shards.addresses(), "gone", 0, 1);
  options.reconnect_give_up_after = absl::Seconds(1);
  auto client = Client::Connect(options, layers, 7);
  ENTROGRAD_ASSERT_OK(client);
  ENTROGRAD_ASSERT_OK(
      (*client)->SendLayer(MakeContribution(0, 0, 0, layers[0].numel)));
  ENTROGRAD_ASSERT_OK((*client)->WaitMerged(0, 0));
  (*client)->MarkApplied(0);

  shards.Kill(0);
  const absl::Time start = absl::Now();
  // Sent while the shard is gone: kept, never acknowledged.
  ENTROGRAD_ASSERT_OK(
      (*client)->SendLayer(MakeContribution(0, 1, 0, layers[0].numel)));
  EXPECT_THAT((*client)->WaitMerged(1, 0),
              StatusIs(absl::StatusCode::kUnavailable, "unreachable"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  // The failure sticks: later waits and sends report it at once.
  EXPECT_THAT((*client)->WaitMerged(2, 0),
              StatusIs(absl::StatusCode::kUnavailable, ""));
  EXPECT_THAT((*client)->SendLayer(MakeContribution(0, 2, 0, layers[0].numel)),
              StatusIs(absl::StatusCode::kFailedPrecondition, "UNAVAILABLE"));
  const absl::Time close_start = absl::Now();
  (*client)->Close();
  EXPECT_LT(absl::Now() - close_start, absl::Seconds(3));
}

TEST(ClientFailuresTest, CloseReturnsPromptlyWithADeadShardAndWakesWaiters) {
  Shards shards(2);
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerSpecification> layers = TestLayers(4);
  auto client = Client::Connect(TestOptions(shards.addresses(), "rounds", 0, 2),
                                layers, 7);
  ENTROGRAD_ASSERT_OK(client);
  shards.Kill(1);
  // Shard 1's port refuses (resets) connections, and counts them.
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RefusingListener> dead,
                                 RefusingListener::Start(shards.port(1)));
  std::atomic<pid_t> waiter_id{0};
  std::atomic<bool> returned{false};
  absl::StatusOr<MergedLayerUpdate> waited;
  std::thread waiter([&] {
    waiter_id.store(CurrentThreadId());
    waited = (*client)->WaitMerged(0, 0);
    returned.store(true);
  });
  // Close comes while the client is reconnecting (it was refused at least
  // once) and the waiter sleeps in WaitMerged.
  EXPECT_TRUE(WaitFor([&] {
    return dead->connections() >= 1 && waiter_id.load() != 0 &&
           ThreadIsAsleep(waiter_id.load());
  })) << "the client never tried to reconnect, or the waiter never blocked";
  EXPECT_FALSE(returned.load());
  const absl::Time start = absl::Now();
  (*client)->Close();
  waiter.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  EXPECT_THAT(waited, StatusIs(absl::StatusCode::kCancelled, "closed"));
  EXPECT_THAT((*client)->SendLayer(MakeContribution(0, 0, 0, layers[0].numel)),
              StatusIs(absl::StatusCode::kFailedPrecondition, "closed"));
  (*client)->Close();  // idempotent
}

TEST(ClientFailuresTest, ConnectToNoShardFailsWithinTheJoinTimeout) {
  int port = 0;
  {
    Shards shards(1);  // a port that was free a moment ago
    ASSERT_TRUE(shards.ok());
    port = shards.server(0).port();
    shards.Kill(0);
  }
  const absl::Time start = absl::Now();
  auto client = Client::Connect(
      TestOptions({absl::StrCat("127.0.0.1:", port)}, "none", 0, 1),
      TestLayers(1), 7,
      /*join_timeout=*/absl::Milliseconds(800));
  EXPECT_THAT(client, StatusIs(absl::StatusCode::kUnavailable, "shard 0"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(ClientFailuresTest, ConnectWaitsForAShardThatStartsLate) {
  Shards shards(1);
  ASSERT_TRUE(shards.ok());
  shards.Kill(0);
  auto not_yet = RefusingListener::Start(shards.port(0));
  ENTROGRAD_ASSERT_OK(not_yet);
  absl::StatusOr<std::unique_ptr<Client>> client;
  std::thread connecting([&] {
    client = Client::Connect(TestOptions(shards.addresses(), "late", 0, 1),
                             TestLayers(1), 7, absl::Seconds(20));
  });
  // The shard starts once Connect found it down (a connection refused).
  EXPECT_TRUE(WaitFor([&] { return (*not_yet)->connections() >= 1; }))
      << "Connect never tried the shard";
  not_yet->reset();
  shards.Restart(0);
  connecting.join();
  ENTROGRAD_ASSERT_OK(client);
  ENTROGRAD_ASSERT_OK(
      (*client)->SendLayer(MakeContribution(0, 0, 0, TestLayers(1)[0].numel)));
  ENTROGRAD_EXPECT_OK((*client)->WaitMerged(0, 0));
}

TEST(ClientFailuresTest, WaitMergedTimesOutWithDeadlineExceeded) {
  Shards shards(1);
  ASSERT_TRUE(shards.ok());
  ClientOptions options = TestOptions(shards.addresses(), "slow", 0, 2);
  options.merge_timeout = absl::Milliseconds(200);
  auto client = Client::Connect(options, TestLayers(1), 7);
  ENTROGRAD_ASSERT_OK(client);
  const absl::Time start = absl::Now();
  EXPECT_THAT((*client)->WaitMerged(0, 0),
              StatusIs(absl::StatusCode::kDeadlineExceeded, "merge timeout"));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(200));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

}  // namespace
}  // namespace entrograd::testing
