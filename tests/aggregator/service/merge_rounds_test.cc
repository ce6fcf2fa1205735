// Rounds over real gRPC: merged updates equal a dense reference bitwise,
// every rank receives the same bytes, arrival order does not matter, and
// duplicates are dropped.
#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <thread>

#include "absl/base/casts.h"
#include "service_fixture.h"
#include "support/status_matchers.h"

namespace entrograd::testing {
namespace {

constexpr uint32_t kWorld = 3;
const std::vector<LayerSpec> kLayers = {{"conv.weight", 5000}, {"fc.weight", 70001}};

JoinSpec Spec(uint32_t rank, const std::string& job = "merge-job") {
  JoinSpec spec;
  spec.job_id = job;
  spec.rank = rank;
  spec.world_size = kWorld;
  spec.layers = kLayers;
  return spec;
}

// Runs `steps` steps of every layer, each step's sends in a shuffled
// (rank, layer) order, and returns every merged payload rank 0 received,
// keyed by (step, layer); checks along the way that all ranks got identical
// bytes equal to the reference.
std::map<std::pair<int64_t, uint32_t>, std::string> RunSteps(
    AggregatorServiceTest* test,
    const std::function<std::unique_ptr<TestWorker>(const JoinSpec&)>& join,
    int steps, uint32_t shuffle_seed) {
  // A job per run: the previous run's streams may still be leaving.
  const std::string job = absl::StrCat("merge-job-", shuffle_seed);
  std::vector<std::unique_ptr<TestWorker>> workers;
  for (uint32_t rank = 0; rank < kWorld; ++rank) workers.push_back(join(Spec(rank, job)));
  std::mt19937 data_rng(1234);  // same data for every call
  std::mt19937 order_rng(shuffle_seed);
  std::map<std::pair<int64_t, uint32_t>, std::string> received;
  for (int step = 0; step < steps; ++step) {
    std::vector<std::vector<SparseVector>> updates(kLayers.size());
    std::vector<std::pair<uint32_t, uint32_t>> sends;  // (rank, layer)
    for (uint32_t layer = 0; layer < kLayers.size(); ++layer) {
      for (uint32_t rank = 0; rank < kWorld; ++rank) {
        updates[layer].push_back(
            RandomSparse(kLayers[layer].numel, kLayers[layer].numel / 50, data_rng));
        sends.push_back({rank, layer});
      }
    }
    std::shuffle(sends.begin(), sends.end(), order_rng);
    for (auto [rank, layer] : sends) {
      EXPECT_TRUE(workers[rank]->SendUpdate(MakeUpdate(
          step, layer, EncodeOrDie(updates[layer][rank]), step - 1)));
    }
    for (uint32_t rank = 0; rank < kWorld; ++rank) {
      for (size_t n = 0; n < kLayers.size(); ++n) {
        auto message = workers[rank]->Read();
        EXPECT_TRUE(message.ok() && message->has_merged_layer())
            << (message.ok() ? message->ShortDebugString() : message.status().ToString());
        if (!message.ok() || !message->has_merged_layer()) return received;
        const v1::MergedLayer& merged = message->merged_layer();
        EXPECT_EQ(merged.step(), step);
        EXPECT_EQ(merged.contributors(), kWorld);
        auto decoded = DecodeMerged(merged);
        EXPECT_TRUE(decoded.ok()) << decoded.status();
        const std::vector<float> got = ToDense(*decoded);
        const std::vector<float> want =
            ReferenceMergeDense(updates[merged.layer_index()]);
        EXPECT_EQ(got.size(), want.size());
        for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
          if (absl::bit_cast<uint32_t>(got[i]) !=
              absl::bit_cast<uint32_t>(want[i])) {
            ADD_FAILURE() << "step " << step << " layer " << merged.layer_index()
                          << " index " << i << ": " << got[i] << " vs " << want[i];
            break;
          }
        }
        const auto key = std::make_pair(merged.step(), merged.layer_index());
        const std::string bytes = merged.payload().SerializeAsString();
        if (rank == 0) {
          received[key] = bytes;
        } else {
          EXPECT_EQ(bytes, received[key]) << "rank " << rank << " got other bytes";
        }
      }
    }
  }
  for (auto& worker : workers) EXPECT_THAT(worker->Finish(), IsOk());
  return received;
}

TEST_F(AggregatorServiceTest, MergedUpdatesEqualTheDenseReferenceForEveryRank) {
  StartServer();
  auto received = RunSteps(this, [this](const JoinSpec& s) { return Joined(s); }, 4, 1);
  EXPECT_EQ(received.size(), 4 * kLayers.size());
}

TEST_F(AggregatorServiceTest, ArrivalOrderDoesNotChangeASingleBit) {
  StartServer();
  auto first = RunSteps(this, [this](const JoinSpec& s) { return Joined(s); }, 3, 1);
  auto second = RunSteps(this, [this](const JoinSpec& s) { return Joined(s); }, 3, 99);
  ASSERT_EQ(first.size(), 3 * kLayers.size());
  EXPECT_EQ(first, second);
}

// Which merge pool thread merges a round, and how many merge at once, must
// never reach the bytes.
TEST_F(AggregatorServiceTest, TheMergePoolsSizeDoesNotChangeASingleBit) {
  aggregator::AggregatorConfig config = TestConfig();
  config.merge_threads = 1;
  StartServer(config);
  auto one = RunSteps(this, [this](const JoinSpec& s) { return Joined(s); }, 3, 7);
  server_.reset();
  config.merge_threads = 4;
  StartServer(config);
  auto four = RunSteps(this, [this](const JoinSpec& s) { return Joined(s); }, 3, 7);
  ASSERT_EQ(one.size(), 3 * kLayers.size());
  EXPECT_EQ(one, four);
}

TEST_F(AggregatorServiceTest, ConcurrentSendersGetTheSameBytes) {
  // Ranks send from their own threads at once: arrival order is whatever
  // the scheduler makes it.
  StartServer();
  std::vector<std::unique_ptr<TestWorker>> workers;
  for (uint32_t rank = 0; rank < kWorld; ++rank) workers.push_back(Joined(Spec(rank, "threads")));
  std::mt19937 rng(5);
  std::vector<SparseVector> updates;
  for (uint32_t rank = 0; rank < kWorld; ++rank) updates.push_back(RandomSparse(70001, 3000, rng));
  std::vector<std::thread> threads;
  std::vector<std::string> bytes(kWorld);
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    threads.emplace_back([&, rank] {
      workers[rank]->SendUpdate(MakeUpdate(0, 1, EncodeOrDie(updates[rank])));
      auto message = workers[rank]->Read();
      if (message.ok() && message->has_merged_layer()) {
        bytes[rank] = message->merged_layer().payload().SerializeAsString();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  ASSERT_FALSE(bytes[0].empty());
  EXPECT_EQ(bytes[0], bytes[1]);
  EXPECT_EQ(bytes[0], bytes[2]);
  v1::SparsePayload payload;
  ASSERT_TRUE(payload.ParseFromString(bytes[0]));
  v1::MergedLayer merged;
  *merged.mutable_payload() = payload;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(DecodedPayload decoded, DecodeMerged(merged));
  const std::vector<float> want = ReferenceMergeDense(updates);
  const std::vector<float> got = ToDense(decoded);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)));
}

TEST_F(AggregatorServiceTest, DuplicatesAreDroppedAndCounted) {
  StartServer();
  auto rank0 = Joined(Spec(0, "dup"));
  auto rank1 = Joined(Spec(1, "dup"));
  auto rank2 = Joined(Spec(2, "dup"));
  std::mt19937 rng(8);
  std::vector<SparseVector> updates;
  for (int r = 0; r < 3; ++r) updates.push_back(RandomSparse(5000, 100, rng));
  rank0->SendUpdate(MakeUpdate(0, 0, EncodeOrDie(updates[0])));
  rank0->SendUpdate(MakeUpdate(0, 0, EncodeOrDie(updates[0])));  // resent
  // Both of rank 0's copies are handled before the round can complete.
  ASSERT_TRUE(WaitFor([&] { return server_->registry().Duplicates() == 1; }));
  rank1->SendUpdate(MakeUpdate(0, 0, EncodeOrDie(updates[1])));
  rank2->SendUpdate(MakeUpdate(0, 0, EncodeOrDie(updates[2])));
  for (auto* worker : {rank0.get(), rank1.get(), rank2.get()}) {
    auto message = worker->Read();
    ASSERT_TRUE(message.ok()) << message.status();
    ASSERT_TRUE(message->has_merged_layer()) << message->ShortDebugString();
  }
  EXPECT_EQ(server_->registry().Duplicates(), 1);
  // Exactly one merged update each: the next message is the stream's end.
  for (auto* worker : {rank0.get(), rank1.get(), rank2.get()}) {
    EXPECT_THAT(worker->Finish(), IsOk());
    EXPECT_EQ(worker->drained(), 0);
  }
  EXPECT_EQ(server_->registry().RoundsInFlight(), 0);
}

}  // namespace
}  // namespace entrograd::testing
