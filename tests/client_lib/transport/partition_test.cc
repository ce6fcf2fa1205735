// Large layers cut into parts on the wire (ClientOptions::partition_bytes):
// the cut itself (LayerPartition), and whole runs through real shards whose
// merged layers must equal the merge of the uncut layers bit for bit.
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "entrograd/client.h"
#include "entrograd/shard_map.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "client_lib/transport/client_test_util.h"
#include "transport/layer_partition.h"

namespace entrograd::testing {
namespace {

using ::testing::ElementsAre;

std::vector<LayerSpecification> ThreeLayers() {
  return {{"a", 10}, {"b", 3}, {"c", 7}};
}

LayerPartition Cut(const std::vector<LayerSpecification>& layers,
                   uint64_t max_part_numel) {
  absl::StatusOr<LayerPartition> partition =
      LayerPartition::Create(layers, max_part_numel);
  EXPECT_TRUE(partition.ok()) << partition.status();
  return *std::move(partition);
}

std::vector<uint64_t> Bounds(const LayerPartition& partition, uint32_t layer) {
  std::vector<uint64_t> bounds;
  for (const LayerPartition::Part& part : partition.parts(layer)) {
    bounds.push_back(part.begin);
    bounds.push_back(part.end);
  }
  return bounds;
}

TEST(LayerPartitionTest, CutsOnlyLargeLayersIntoNearlyEqualParts) {
  const LayerPartition partition = Cut(ThreeLayers(), 3);
  EXPECT_TRUE(partition.cuts_any_layer());
  EXPECT_EQ(partition.layer_count(), 3u);
  EXPECT_THAT(Bounds(partition, 0), ElementsAre(0, 2, 2, 5, 5, 7, 7, 10));
  EXPECT_THAT(Bounds(partition, 1), ElementsAre(0, 3));
  EXPECT_THAT(Bounds(partition, 2), ElementsAre(0, 2, 2, 4, 4, 7));
  std::vector<std::string> names;
  std::vector<uint64_t> sizes;
  for (const LayerSpecification& wire : partition.wire_layers()) {
    names.push_back(wire.name);
    sizes.push_back(wire.numel);
  }
  EXPECT_THAT(names, ElementsAre("a#0/4", "a#1/4", "a#2/4", "a#3/4", "b",
                                 "c#0/3", "c#1/3", "c#2/3"));
  EXPECT_THAT(sizes, ElementsAre(2, 3, 2, 3, 3, 2, 2, 3));
  EXPECT_EQ(partition.parts(2)[1].wire_layer, 6u);

  EXPECT_FALSE(Cut(ThreeLayers(), 10).cuts_any_layer());
  EXPECT_THAT(LayerPartition::Create(ThreeLayers(), 0).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "at least 1 element"));
}

TEST(LayerPartitionTest, SplitsSparseAndDenseContributionsByElementRange) {
  const LayerPartition partition = Cut(ThreeLayers(), 3);
  LayerContribution sparse;
  sparse.step = 7;
  sparse.layer = 0;
  sparse.numel = 10;
  sparse.indices = {1, 5, 6, 9};
  sparse.values = {0.5f, -1.0f, 2.0f, 3.0f};
  sparse.entropy = 1.25;
  absl::StatusOr<std::vector<LayerContribution>> pieces =
      partition.Split(sparse);
  ASSERT_TRUE(pieces.ok()) << pieces.status();
  ASSERT_EQ(pieces->size(), 4u);
  EXPECT_THAT((*pieces)[0].indices, ElementsAre(1));
  EXPECT_THAT((*pieces)[1].indices, ElementsAre());  // [2, 5): nothing sent
  EXPECT_THAT((*pieces)[2].indices, ElementsAre(0, 1));
  EXPECT_THAT((*pieces)[2].values, ElementsAre(-1.0f, 2.0f));
  EXPECT_THAT((*pieces)[3].indices, ElementsAre(2));
  for (size_t i = 0; i < pieces->size(); ++i) {
    EXPECT_EQ((*pieces)[i].step, 7);
    EXPECT_EQ((*pieces)[i].layer, i);
    EXPECT_FALSE((*pieces)[i].dense);
    EXPECT_EQ((*pieces)[i].entropy, 1.25);
  }

  LayerContribution dense;
  dense.layer = 2;
  dense.numel = 7;
  dense.dense = true;
  dense.values = {1, 2, 3, 4, 5, 6, 7};
  pieces = partition.Split(dense);
  ASSERT_TRUE(pieces.ok()) << pieces.status();
  ASSERT_EQ(pieces->size(), 3u);
  EXPECT_THAT((*pieces)[2].values, ElementsAre(5, 6, 7));
  EXPECT_EQ((*pieces)[2].layer, 7u);
  EXPECT_EQ((*pieces)[2].numel, 3u);
  EXPECT_TRUE((*pieces)[2].dense);
}

TEST(LayerPartitionTest, RefusesContributionsThatCannotBeCut) {
  const LayerPartition partition = Cut(ThreeLayers(), 3);
  LayerContribution bad;
  bad.layer = 0;
  bad.numel = 10;
  bad.indices = {4, 2};
  bad.values = {1, 1};
  EXPECT_THAT(partition.Split(bad).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "index 2 at position 1 is not above"));
  bad.indices = {4, 10};
  EXPECT_THAT(partition.Split(bad).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "index 10 at position 1 is not below"));
  bad.indices = {4};
  EXPECT_THAT(partition.Split(bad).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "1 indices but 2 values"));
  bad.numel = 9;
  EXPECT_THAT(partition.Split(bad).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "numel 9 is not the layer's 10"));
  bad.layer = 3;
  EXPECT_THAT(partition.Split(bad).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "unknown layer 3"));
  LayerContribution short_dense;
  short_dense.layer = 1;
  short_dense.numel = 3;
  short_dense.dense = true;
  short_dense.values = {1, 2};
  EXPECT_THAT(partition.Split(short_dense).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "2 values for numel 3"));
}

// The parts of a contribution, as merged updates of a one-rank job.
std::vector<MergedLayerUpdate> AsMerged(
    const std::vector<LayerContribution>& pieces) {
  std::vector<MergedLayerUpdate> merged;
  for (const LayerContribution& piece : pieces) {
    MergedLayerUpdate update;
    update.step = piece.step;
    update.layer = piece.layer;
    update.payload.numel = piece.numel;
    update.payload.dense = piece.dense;
    update.payload.indices = piece.indices;
    update.payload.values = piece.values;
    update.wire_bytes = 8 * static_cast<int64_t>(piece.values.size());
    merged.push_back(std::move(update));
  }
  return merged;
}

TEST(LayerPartitionTest, AssembledPartsScatterToTheWholeLayer) {
  const std::vector<LayerSpecification> layers = {{"w", 1000}};
  const LayerPartition partition = Cut(layers, 97);
  std::mt19937 rng(5);
  for (uint64_t count : {0u, 3u, 120u, 499u, 500u, 1000u}) {
    SparseVector sparse = RandomSparse(1000, count, rng);
    LayerContribution contribution;
    contribution.step = 3;
    contribution.numel = 1000;
    contribution.indices = sparse.indices;
    contribution.values = sparse.values;
    absl::StatusOr<std::vector<LayerContribution>> pieces =
        partition.Split(contribution);
    ASSERT_TRUE(pieces.ok()) << pieces.status();
    absl::StatusOr<MergedLayerUpdate> whole =
        partition.Assemble(0, 3, AsMerged(*pieces));
    ASSERT_TRUE(whole.ok()) << whole.status();
    EXPECT_EQ(whole->step, 3);
    EXPECT_EQ(whole->layer, 0u);
    EXPECT_EQ(whole->wire_bytes, 8 * static_cast<int64_t>(count));
    // Sparse parts stay sparse, however much they carry: the optimizer
    // reads a carried index as applied (global top-k), so the assembly
    // carries exactly what the parts carried.
    EXPECT_FALSE(whole->payload.dense) << count;
    EXPECT_EQ(whole->payload.indices, sparse.indices) << count;
    std::vector<float> expected(1000, 0.0f);
    for (size_t j = 0; j < sparse.indices.size(); ++j) {
      expected[sparse.indices[j]] = sparse.values[j];
    }
    EXPECT_TRUE(BitwiseEqual(ToDense(whole->payload), expected)) << count;
  }
}

TEST(LayerPartitionTest, DensePartsAssembleDenseAndMixedPartsSparse) {
  const std::vector<LayerSpecification> layers = {{"w", 1000}};
  const LayerPartition partition = Cut(layers, 97);
  LayerContribution contribution;
  contribution.step = 3;
  contribution.numel = 1000;
  contribution.dense = true;
  contribution.values.assign(1000, 0.5f);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::vector<LayerContribution> pieces,
                                 partition.Split(contribution));
  std::vector<MergedLayerUpdate> merged = AsMerged(pieces);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(MergedLayerUpdate whole,
                                 partition.Assemble(0, 3, merged));
  EXPECT_TRUE(whole.payload.dense);
  // One part sparse (carrying its first element only): the rest, dense,
  // is carried element by element.
  merged[1].payload.dense = false;
  merged[1].payload.indices = {0};
  merged[1].payload.values = {0.25f};
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(whole, partition.Assemble(0, 3, merged));
  EXPECT_FALSE(whole.payload.dense);
  EXPECT_EQ(whole.payload.indices.size(), 1000 - merged[1].payload.numel + 1);
  const std::vector<float> dense = ToDense(whole.payload);
  EXPECT_EQ(dense[partition.parts(0)[1].begin], 0.25f);
  EXPECT_EQ(dense[partition.parts(0)[1].begin + 1], 0.0f);
  EXPECT_EQ(dense[999], 0.5f);
}

TEST(LayerPartitionTest, AssembleRefusesPartsOfAnotherRound) {
  const LayerPartition partition = Cut(ThreeLayers(), 3);
  LayerContribution dense;
  dense.step = 4;
  dense.layer = 2;
  dense.numel = 7;
  dense.dense = true;
  dense.values = {1, 2, 3, 4, 5, 6, 7};
  std::vector<MergedLayerUpdate> merged = AsMerged(*partition.Split(dense));
  absl::StatusOr<MergedLayerUpdate> whole = partition.Assemble(2, 4, merged);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_TRUE(whole->payload.dense);
  EXPECT_THAT(whole->payload.values, ElementsAre(1, 2, 3, 4, 5, 6, 7));
  merged[1].step = 5;
  EXPECT_THAT(partition.Assemble(2, 4, merged).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "part 1: got step 5"));
  merged.pop_back();
  EXPECT_THAT(partition.Assemble(2, 4, merged).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "has 3 parts, got 2"));
}

// Layers of 500..3300 elements cut into parts of at most 600: whole runs
// through three shards merge bit for bit as the uncut layers would.
TEST(PartitionedClientTest, CutLayersMergeBitwiseAsWholeLayersOverShards) {
  Shards shards(3);
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerSpecification> layers = TestLayers(5);
  constexpr uint32_t kWorld = 3;
  constexpr int64_t kSteps = 4;
  std::vector<WorkerRun> runs(kWorld);
  std::vector<std::thread> threads;
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    threads.emplace_back([&, rank] {
      ClientOptions options =
          TestOptions(shards.addresses(), "partitioned", rank, kWorld);
      options.partition_bytes = 600 * sizeof(float);
      absl::StatusOr<std::unique_ptr<Client>> client =
          Client::Connect(options, layers, /*initial_params_hash=*/1);
      if (!client.ok()) {
        runs[rank].status = client.status();
        return;
      }
      runs[rank] = RunWorker(**client, rank, kSteps, layers);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    ASSERT_TRUE(runs[rank].status.ok()) << rank << ": " << runs[rank].status;
  }
  ExpectMergedEqualReference(runs, kSteps, layers);

  // Dense accounting is the uncut layers': 4 bytes per element sent.
  uint64_t total_numel = 0;
  for (const LayerSpecification& layer : layers) total_numel += layer.numel;
  EXPECT_EQ(runs[0].traffic.uplink_dense_bytes,
            static_cast<int64_t>(4 * total_numel * kSteps));

  // The largest layer (3300 elements, 6 parts) uses more than one shard.
  absl::StatusOr<LayerPartition> partition =
      LayerPartition::Create(layers, 600);
  ASSERT_TRUE(partition.ok());
  absl::StatusOr<ShardMap> map = ShardMap::Create(shards.addresses());
  ASSERT_TRUE(map.ok());
  std::set<int> used;
  for (const LayerPartition::Part& part : partition->parts(4)) {
    used.insert(map->ShardOf("partitioned", part.wire_layer));
  }
  EXPECT_GT(used.size(), 1u);
}

// A wait that times out after some parts arrived goes on from there: the
// parts already returned by the inner client are not asked for again.
TEST(PartitionedClientTest, AWaitThatTimesOutKeepsThePartsThatArrived) {
  Shards shards(1);
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerSpecification> layers = {{"w", 100}};
  ClientOptions cut = TestOptions(shards.addresses(), "partial", 0, 2);
  cut.partition_bytes = 50 * sizeof(float);
  cut.merge_timeout = absl::Milliseconds(300);
  absl::StatusOr<std::unique_ptr<Client>> rank0 =
      Client::Connect(cut, layers, 1);
  ASSERT_TRUE(rank0.ok()) << rank0.status();
  // Rank 1 speaks the parts' table itself, so it can send one part only.
  absl::StatusOr<LayerPartition> partition = LayerPartition::Create(layers, 50);
  ASSERT_TRUE(partition.ok());
  ClientOptions whole = TestOptions(shards.addresses(), "partial", 1, 2);
  whole.partition_bytes = 0;
  absl::StatusOr<std::unique_ptr<Client>> rank1 =
      Client::Connect(whole, partition->wire_layers(), 1);
  ASSERT_TRUE(rank1.ok()) << rank1.status();

  std::vector<LayerContribution> contributions;
  for (uint32_t rank = 0; rank < 2; ++rank) {
    LayerContribution contribution;
    contribution.numel = 100;
    contribution.dense = true;
    for (int i = 0; i < 100; ++i) {
      contribution.values.push_back(static_cast<float>(rank * 1000 + i) / 7);
    }
    contributions.push_back(contribution);
  }
  ENTROGRAD_ASSERT_OK((*rank0)->SendLayer(contributions[0]));
  absl::StatusOr<std::vector<LayerContribution>> pieces =
      partition->Split(contributions[1]);
  ASSERT_TRUE(pieces.ok());
  ENTROGRAD_ASSERT_OK((*rank1)->SendLayer((*pieces)[0]));
  EXPECT_THAT((*rank0)->WaitMerged(0, 0).status(),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       "layer 0 part 2/2"));
  ENTROGRAD_ASSERT_OK((*rank1)->SendLayer((*pieces)[1]));
  absl::StatusOr<MergedLayerUpdate> merged = (*rank0)->WaitMerged(0, 0);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_TRUE(BitwiseEqual(ToDense(merged->payload),
                           ReferenceMergeDense(contributions)));
}

TEST(PartitionedClientTest, RefusesANegativeOrTinyPartitionSize) {
  for (int64_t bytes : {int64_t{-1}, int64_t{3}}) {
    ClientOptions options = TestOptions({"127.0.0.1:1"}, "job", 0, 1);
    options.partition_bytes = bytes;
    EXPECT_THAT(Client::Connect(options, TestLayers(1), 1).status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "partition_bytes"));
  }
}

}  // namespace
}  // namespace entrograd::testing
