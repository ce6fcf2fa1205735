// Rounds through real shards: W clients on threads, S in-process shards.
#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "client_lib/transport/client_test_util.h"
#include "entrograd/shard_map.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "support/thread_state.h"
#include "support/wait_for.h"

namespace entrograd::testing {
namespace {

TEST(ClientRoundsTest, ThreeClientsTwoShardsGetTheReferenceMergeBitwise) {
  constexpr uint32_t kWorld = 3;
  constexpr int64_t kSteps = 4;
  const std::string job = "rounds";
  Shards shards(2);
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerSpecification> layers = TestLayers(6);

  // The layers really spread over both shards.
  auto map = ShardMap::Create(shards.addresses());
  ASSERT_TRUE(map.ok());
  std::set<int> used;
  for (uint32_t l = 0; l < layers.size(); ++l)
    used.insert(map->ShardOf(job, l));
  ASSERT_EQ(used, (std::set<int>{0, 1})) << "pick another job id";

  std::vector<std::unique_ptr<Client>> clients(kWorld);
  std::vector<std::thread> connecting;
  std::vector<absl::Status> connected(kWorld);
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    connecting.emplace_back([&, rank] {
      auto client =
          Client::Connect(TestOptions(shards.addresses(), job, rank, kWorld),
                          layers, /*initial_params_hash=*/7);
      connected[rank] = client.status();
      if (client.ok()) clients[rank] = std::move(*client);
    });
  }
  for (auto& thread : connecting) thread.join();
  for (uint32_t rank = 0; rank < kWorld; ++rank)
    ENTROGRAD_ASSERT_OK(connected[rank]);

  std::vector<WorkerRun> runs(kWorld);
  std::vector<std::thread> workers;
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    workers.emplace_back([&, rank] {
      runs[rank] = RunWorker(*clients[rank], rank, kSteps, layers);
    });
  }
  for (auto& thread : workers) thread.join();
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    ENTROGRAD_ASSERT_OK(runs[rank].status) << "rank " << rank;
    EXPECT_EQ(runs[rank].traffic.reconnects, 0);
  }
  ExpectMergedEqualReference(runs, kSteps, layers);
  // Each shard merged rounds: both saw streams, none holds a round now.
  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(shards.server(s).registry().RoundsInFlight(), 0);
  }
  // Once returned, a merged update is not returned again.
  EXPECT_THAT(clients[0]->WaitMerged(kSteps - 1, 0),
              StatusIs(absl::StatusCode::kFailedPrecondition, "applied"));
  for (auto& client : clients) client->Close();
}

TEST(ClientRoundsTest, WaitBeforeTheRoundCompletesAndRepeatedWaitIsRefused) {
  Shards shards(1);
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerSpecification> layers = TestLayers(2);
  auto rank0 = Client::Connect(TestOptions(shards.addresses(), "waits", 0, 2),
                               layers, 1);
  auto rank1 = Client::Connect(TestOptions(shards.addresses(), "waits", 1, 2),
                               layers, 1);
  ENTROGRAD_ASSERT_OK(rank0);
  ENTROGRAD_ASSERT_OK(rank1);
  // Rank 0 waits first; rank 1's contribution completes the round later.
  std::atomic<pid_t> waiter_id{0};
  std::atomic<bool> returned{false};
  absl::StatusOr<MergedLayerUpdate> waited;
  std::thread waiter([&] {
    waiter_id.store(CurrentThreadId());
    waited = (*rank0)->WaitMerged(0, 1);
    returned.store(true);
  });
  ENTROGRAD_ASSERT_OK(
      (*rank0)->SendLayer(MakeContribution(0, 0, 1, layers[1].numel)));
  // Rank 1 sends only once the shard holds rank 0's half of the round and
  // the waiter sleeps in WaitMerged.
  const bool ready = WaitFor([&] {
    return shards.server(0).registry().RoundsInFlight() == 1 &&
           waiter_id.load() != 0 && ThreadIsAsleep(waiter_id.load());
  });
  EXPECT_TRUE(ready) << "rank 0's contribution never arrived, or the waiter "
                        "never blocked";
  EXPECT_FALSE(returned.load()) << "WaitMerged returned before the round "
                                   "could complete";
  ENTROGRAD_ASSERT_OK(
      (*rank1)->SendLayer(MakeContribution(1, 0, 1, layers[1].numel)));
  waiter.join();
  ENTROGRAD_ASSERT_OK(waited);
  EXPECT_TRUE(BitwiseEqual(
      ToDense(waited->payload),
      ReferenceMergeDense({MakeContribution(0, 0, 1, layers[1].numel),
                           MakeContribution(1, 0, 1, layers[1].numel)})));
  EXPECT_THAT(
      (*rank0)->WaitMerged(0, 1),
      StatusIs(absl::StatusCode::kFailedPrecondition, "already returned"));
  // A contribution is sent once.
  EXPECT_THAT((*rank0)->SendLayer(MakeContribution(0, 0, 1, layers[1].numel)),
              StatusIs(absl::StatusCode::kFailedPrecondition, "already sent"));
  ENTROGRAD_EXPECT_OK((*rank1)->WaitMerged(0, 1));
}

}  // namespace
}  // namespace entrograd::testing
