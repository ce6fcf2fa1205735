// Three aggregator replicas as one sharded service: a job's layers are split
// by the client's ShardMap; every rank opens one stream per shard (joining
// each with the full layer table) and sends each layer to its owner only.
// Each layer's merged update must come back from its owner, bitwise right,
// and each shard must count exactly the rounds of the layers it owns.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "aggregator/process/aggregator_process.h"
#include "aggregator/process/process_test_util.h"
#include "aggregator/support/test_worker.h"
#include "entrograd/shard_map.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::testing {
namespace {

constexpr int kShards = 3;
constexpr uint32_t kRanks = 2;
constexpr uint32_t kLayers = 12;
constexpr char kJob[] = "sharded-job";

TEST(ShardingProcessTest, ThreeReplicasEachMergeTheLayersTheyOwn) {
  std::vector<std::unique_ptr<AggregatorProcess>> shards;
  std::vector<std::string> addresses;
  for (int s = 0; s < kShards; ++s) {
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        std::unique_ptr<AggregatorProcess> shard,
        AggregatorProcess::Start({absl::StrCat("--shard_name=shard-", s)}));
    addresses.push_back(shard->address());
    shards.push_back(std::move(shard));
  }
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(ShardMap map, ShardMap::Create(addresses));

  // Layer table, owners, and each rank's contribution per layer.
  std::vector<LayerSpec> table;
  std::vector<int> owner(kLayers);
  std::vector<int> owned_count(kShards, 0);
  std::vector<std::vector<SparseVector>> contributions(kLayers);
  for (uint32_t layer = 0; layer < kLayers; ++layer) {
    const uint64_t numel = 500 + 250 * layer;
    table.push_back({absl::StrCat("block", layer, ".weight"), numel});
    owner[layer] = map.ShardOf(kJob, layer);
    ASSERT_GE(owner[layer], 0);
    ASSERT_LT(owner[layer], kShards);
    ++owned_count[owner[layer]];
    for (uint32_t rank = 0; rank < kRanks; ++rank) {
      contributions[layer].push_back(
          RandomSparse(numel, numel / 10, 1000 * layer + rank));
    }
  }
  int shards_used = 0;
  for (int count : owned_count) shards_used += count > 0;
  ASSERT_GT(shards_used, 1) << "the shard map put every layer on one shard";

  // streams[rank][shard]: every rank joins every shard with the full table.
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (int s = 0; s < kShards; ++s) {
    channels.push_back(LoopbackChannel(shards[s]->port()));
  }
  std::vector<std::vector<std::unique_ptr<TestWorker>>> streams(kRanks);
  for (uint32_t rank = 0; rank < kRanks; ++rank) {
    for (int s = 0; s < kShards; ++s) {
      streams[rank].push_back(std::make_unique<TestWorker>(
          channels[s], std::nullopt, absl::Seconds(30)));
      JoinSpec spec;
      spec.job_id = kJob;
      spec.rank = rank;
      spec.world_size = kRanks;
      spec.layers = table;
      absl::StatusOr<v1::JoinAck> ack = streams[rank][s]->Join(MakeJoin(spec));
      ASSERT_THAT(ack, IsOk()) << "rank " << rank << " shard " << s;
      EXPECT_EQ(ack->shard_name(), absl::StrCat("shard-", s));
    }
  }

  // Each layer goes to its owner only.
  for (uint32_t rank = 0; rank < kRanks; ++rank) {
    for (uint32_t layer = 0; layer < kLayers; ++layer) {
      ASSERT_TRUE(streams[rank][owner[layer]]->SendUpdate(
          MakeUpdate(0, layer, EncodeOrDie(contributions[layer][rank]))))
          << "rank " << rank << " layer " << layer;
    }
  }

  // Every shard answers with exactly the layers it owns, each correct and
  // the same bytes for both ranks.
  std::map<uint32_t, std::string> payload_of_rank0;
  for (uint32_t rank = 0; rank < kRanks; ++rank) {
    std::set<uint32_t> received;
    for (int s = 0; s < kShards; ++s) {
      for (int n = 0; n < owned_count[s]; ++n) {
        absl::StatusOr<v1::AggregatorMessage> message = streams[rank][s]->Read();
        ASSERT_TRUE(message.ok() && message->has_merged_layer())
            << "rank " << rank << " shard " << s << ": " << Describe(message);
        const v1::MergedLayer& merged = message->merged_layer();
        const uint32_t layer = merged.layer_index();
        ASSERT_LT(layer, kLayers);
        EXPECT_EQ(owner[layer], s)
            << "layer " << layer << " came back from a shard that does not own it";
        EXPECT_TRUE(received.insert(layer).second)
            << "layer " << layer << " merged twice for rank " << rank;
        EXPECT_EQ(merged.step(), 0);
        EXPECT_EQ(merged.contributors(), kRanks);
        EXPECT_EQ(CompareMerged(merged, ReferenceMerge(contributions[layer])), "")
            << "layer " << layer << " from shard " << s << " to rank " << rank;
        const std::string bytes = merged.payload().SerializeAsString();
        if (rank == 0) {
          payload_of_rank0[layer] = bytes;
        } else {
          EXPECT_EQ(bytes, payload_of_rank0[layer]) << "layer " << layer;
        }
      }
    }
    EXPECT_EQ(received.size(), kLayers) << "rank " << rank;
  }
  for (auto& rank_streams : streams) {
    for (auto& stream : rank_streams) EXPECT_THAT(stream->Finish(), IsOk());
  }

  for (int s = 0; s < kShards; ++s) {
    absl::StatusOr<std::string> text = ScrapeMetrics(shards[s]->metrics_port());
    ASSERT_THAT(text, IsOk()) << "shard " << s;
    EXPECT_EQ(SampleValue(*text, "entrograd_rounds_total{outcome=\"completed\"}"),
              std::optional<double>(owned_count[s]))
        << "shard " << s << " owns " << owned_count[s] << " layers";
    EXPECT_EQ(SampleValue(*text, "entrograd_rounds_total{outcome=\"aborted\"}"),
              std::optional<double>(0))
        << "shard " << s;
  }
}

}  // namespace
}  // namespace entrograd::testing
