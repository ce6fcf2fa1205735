// Nothing lost: a shard killed (as by SIGKILL) between rounds and in the
// middle of a step, then restarted empty on the same port. The clients
// reconnect, Join again with their applied step, resend what they keep,
// and every merged update still arrives, right and once.
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "client_lib/transport/client_test_util.h"
#include "client_lib/transport/shard_metrics.h"
#include "entrograd/shard_map.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/refusing_listener.h"
#include "support/status_matchers.h"
#include "support/wait_for.h"

namespace entrograd::testing {
namespace {

// Counts workers that reached a point of a step.
class StepCounter {
 public:
  void Arrive(int64_t step) {
    absl::MutexLock lock(&mutex_);
    ++arrived_[step];
  }
  bool WaitForAll(int64_t step, int count) {
    absl::MutexLock lock(&mutex_);
    auto reached = [&] { return arrived_[step] >= count; };
    return mutex_.AwaitWithTimeout(absl::Condition(&reached),
                                   absl::Seconds(30));
  }

 private:
  absl::Mutex mutex_;
  std::map<int64_t, int> arrived_;
};

TEST(ClientRestartTest, ShardKilledBetweenRoundsAndMidStepLosesNothing) {
  constexpr uint32_t kWorld = 3;
  constexpr int64_t kSteps = 6;
  constexpr int64_t kKillBetween = 2;  // killed after every rank applied step 1
  constexpr int64_t kKillMidStep = 4;  // killed after ranks 0, 1 sent step 4
  constexpr int kVictim = 0;
  const std::string job = "rounds";  // spreads over both shards
  Shards shards(2);
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerSpecification> layers = TestLayers(6);
  auto map = ShardMap::Create(shards.addresses());
  ASSERT_TRUE(map.ok());
  int64_t victim_layers = 0;
  int64_t victim_dense_bytes = 0;  // one rank's step on the victim, dense
  for (uint32_t l = 0; l < layers.size(); ++l) {
    if (map->ShardOf(job, l) != kVictim) continue;
    ++victim_layers;
    victim_dense_bytes += 4 * static_cast<int64_t>(layers[l].numel);
  }
  ASSERT_GT(victim_layers, 0);
  ASSERT_LT(victim_layers, static_cast<int64_t>(layers.size()));

  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::vector<std::unique_ptr<Client>> clients,
      ConnectRanks(shards, job, kWorld, layers, /*initial_params_hash=*/7));

  StepCounter applied;
  StepCounter sent;
  absl::Notification between_done;  // the between-rounds restart is over
  absl::Notification mid_go;        // ranks 0 and 1 may send step 4
  absl::Notification mid_done;      // the mid-step kill is over
  std::vector<WorkerRun> runs(kWorld);
  std::vector<std::thread> workers;
  // On any exit (a failed assertion too): release the workers, join them.
  auto release = absl::MakeCleanup([&] {
    for (absl::Notification* gate : {&between_done, &mid_go, &mid_done}) {
      if (!gate->HasBeenNotified()) gate->Notify();
    }
    for (auto& thread : workers) thread.join();
    for (auto& client : clients) client->Close();
  });
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    WorkerHooks hooks;
    hooks.before_step = [&, rank](int64_t step) {
      if (step == kKillBetween) between_done.WaitForNotification();
      // Rank 2 sends step kKillMidStep only after the shard died.
      if (step == kKillMidStep) {
        (rank == 2 ? mid_done : mid_go).WaitForNotification();
      }
    };
    hooks.after_sends = [&](int64_t step) { sent.Arrive(step); };
    hooks.after_applied = [&](int64_t step) { applied.Arrive(step); };
    workers.emplace_back([&, rank, hooks] {
      runs[rank] = RunWorker(*clients[rank], rank, kSteps, layers, hooks);
    });
  }

  // Between rounds: every rank applied step 1; the shard dies and stays
  // down until the clients tried to reconnect and were refused (as many
  // refusals as ranks: they are backing off), then comes back empty.
  ASSERT_TRUE(applied.WaitForAll(kKillBetween - 1, kWorld));
  shards.Kill(kVictim);
  {
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RefusingListener> down,
                                   RefusingListener::Start(shards.port(kVictim)));
    ASSERT_TRUE(WaitFor([&] { return down->connections() >= kWorld; }))
        << "the clients never tried to reach the dead shard";
  }
  shards.Restart(kVictim);
  between_done.Notify();

  // Mid-step: ranks 0 and 1 sent step 4 and the shard holds their rounds;
  // then it dies and comes back at once; rank 2 sends afterwards. (Rounds
  // in flight before step 4: stale ones rebuilt from resends after the
  // first restart, which the round timeout will abort.)
  ASSERT_TRUE(applied.WaitForAll(kKillMidStep - 1, kWorld));
  const int64_t stale_rounds =
      shards.server(kVictim).registry().RoundsInFlight();
  // What the victim accepted so far: every contribution up to step 3 (all
  // of step 3's rounds merged, and each stream delivers in order).
  auto received_dense_bytes = [&]() -> double {
    absl::StatusOr<double> bytes = ShardCounter(
        shards.server(kVictim), "entrograd_uplink_dense_bytes_total");
    EXPECT_TRUE(bytes.ok()) << bytes.status();
    return bytes.value_or(-1);
  };
  const double received_before = received_dense_bytes();
  mid_go.Notify();
  ASSERT_TRUE(sent.WaitForAll(kKillMidStep, kWorld - 1));
  ASSERT_TRUE(WaitFor([&] {
    return shards.server(kVictim).registry().RoundsInFlight() ==
           stale_rounds + victim_layers;
  })) << "the victim never held step "
      << kKillMidStep << "'s rounds";
  // Both ranks' contributions, not only the first one of each round, are
  // in the victim when it dies.
  ASSERT_TRUE(WaitFor([&] {
    return received_dense_bytes() >=
           received_before + (kWorld - 1) * victim_dense_bytes;
  })) << "the victim never received ranks 0 and 1's step " << kKillMidStep;
  shards.Kill(kVictim);
  shards.Restart(kVictim);
  mid_done.Notify();

  std::move(release).Invoke();
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    ENTROGRAD_ASSERT_OK(runs[rank].status) << "rank " << rank;
    EXPECT_GE(runs[rank].traffic.reconnects, 2) << "rank " << rank;
    EXPECT_EQ(static_cast<int64_t>(runs[rank].merged.size()),
              kSteps * static_cast<int64_t>(layers.size()));
  }
  ExpectMergedEqualReference(runs, kSteps, layers);
}

// The merged update of a round reached a rank, which applied it, before the
// shard died; after the restart the others still get it, the one that
// applied it does not get it again, and training continues.
TEST(ClientRestartTest, RoundMergedBeforeTheKillIsDeliveredOnceAfterRestart) {
  constexpr uint32_t kWorld = 2;
  Shards shards(1);
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerSpecification> layers = TestLayers(1);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::vector<std::unique_ptr<Client>> clients,
                                 ConnectRanks(shards, "once", kWorld, layers, 7));
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    ENTROGRAD_ASSERT_OK(clients[rank]->SendLayer(
        MakeContribution(rank, 0, 0, layers[0].numel)));
  }
  // Rank 0 applies step 0 and sends step 1; rank 1 has the merged step 0
  // waiting in its inbox but has not applied it yet.
  ENTROGRAD_ASSERT_OK(clients[0]->WaitMerged(0, 0));
  clients[0]->MarkApplied(0);
  ENTROGRAD_ASSERT_OK(
      clients[0]->SendLayer(MakeContribution(0, 1, 0, layers[0].numel)));
  ASSERT_TRUE(WaitFor(
      [&] { return shards.server(0).registry().RoundsInFlight() == 1; }));
  shards.Kill(0);
  shards.Restart(0);
  // Rank 1 gets step 0 (once, although the rebuilt round is sent to it
  // again), then both finish step 1.
  auto merged0 = clients[1]->WaitMerged(0, 0);
  ENTROGRAD_ASSERT_OK(merged0);
  clients[1]->MarkApplied(0);
  ENTROGRAD_ASSERT_OK(
      clients[1]->SendLayer(MakeContribution(1, 1, 0, layers[0].numel)));
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    auto merged1 = clients[rank]->WaitMerged(1, 0);
    ENTROGRAD_ASSERT_OK(merged1) << "rank " << rank;
    EXPECT_TRUE(BitwiseEqual(
        ToDense(merged1->payload),
        ReferenceMergeDense({MakeContribution(0, 1, 0, layers[0].numel),
                             MakeContribution(1, 1, 0, layers[0].numel)})));
    EXPECT_GE(clients[rank]->traffic().reconnects, 1);
  }
}

}  // namespace
}  // namespace entrograd::testing
