// What a real shard tells the client it must respect: its message limit
// (JoinAck.max_message_bytes) both ways, and its verdict that a newer
// incarnation of this rank took over (no reconnect, a clear error).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "client_lib/transport/client_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::testing {
namespace {

// `count` indices from `first`, all 0.25.
LayerContribution ConsecutiveRun(int64_t step, uint32_t layer, uint64_t numel,
                                 uint32_t first, uint32_t count) {
  LayerContribution contribution;
  contribution.step = step;
  contribution.layer = layer;
  contribution.numel = numel;
  for (uint32_t i = 0; i < count; ++i) {
    contribution.indices.push_back(first + i);
    contribution.values.push_back(0.25f);
  }
  return contribution;
}

TEST(ClientShardLimitTest, UpdateLargerThanTheShardAcceptsIsRefusedAndNotKept) {
  constexpr int64_t kShardLimit = 8192;
  Shards shards(1, absl::Seconds(20), [](aggregator::AggregatorConfig& c) {
    c.max_message_bytes = kShardLimit;
  });
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerSpecification> layers = {{"big", 4096}};
  // The client's own limit is far larger: the shard's governs.
  auto client = Client::Connect(TestOptions(shards.addresses(), "limit", 0, 1),
                                layers, 1);
  ENTROGRAD_ASSERT_OK(client);
  const absl::Status refused =
      (*client)->SendLayer(DenseContribution(0, 0, 4096, 0.5f));
  EXPECT_THAT(refused,
              StatusIs(absl::StatusCode::kResourceExhausted, "layer 0"));
  EXPECT_THAT(std::string(refused.message()),
              ::testing::HasSubstr(
                  absl::StrCat("more than the ", kShardLimit, " bytes")));
  EXPECT_THAT(std::string(refused.message()),
              ::testing::ContainsRegex("the update is 16[0-9]{3} bytes"));
  EXPECT_EQ((*client)->traffic().uplink_wire_bytes, 0);
  // Nothing kept: the same round can still be sent, smaller, and merges.
  ENTROGRAD_ASSERT_OK((*client)->SendLayer(ConsecutiveRun(0, 0, 4096, 0, 100)));
  auto merged = (*client)->WaitMerged(0, 0);
  ENTROGRAD_ASSERT_OK(merged);
  EXPECT_EQ(merged->payload.values.size(), 100u);
}

TEST(ClientShardLimitTest, MergedUpdateLargerThanTheClientsOwnLimitArrives) {
  // Each rank's update fits the clients' limit; their union does not.
  constexpr uint64_t kNumel = 8192;
  constexpr uint32_t kPerRank = 2000;  // 8000 value bytes each
  Shards shards(1);
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerSpecification> layers = {{"wide", kNumel}};
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::vector<std::unique_ptr<Client>> clients,
      ConnectRanks(shards, "wide", 2, layers, 1, [](ClientOptions& options) {
        options.max_message_bytes = 12000;
        options.merge_timeout = absl::Seconds(10);
      }));
  for (uint32_t rank = 0; rank < 2; ++rank) {
    ENTROGRAD_ASSERT_OK(clients[rank]->SendLayer(
        ConsecutiveRun(0, 0, kNumel, rank * kPerRank, kPerRank)));
  }
  for (uint32_t rank = 0; rank < 2; ++rank) {
    auto merged = clients[rank]->WaitMerged(0, 0);
    ENTROGRAD_ASSERT_OK(merged);
    EXPECT_EQ(merged->payload.values.size(), 2 * kPerRank);
    EXPECT_GT(merged->wire_bytes, 12000);
  }
}

// The shard's own limit is below the union: it aborts the round with
// RESOURCE_EXHAUSTED, reason MERGED_TOO_LARGE. RESOURCE_EXHAUSTED is
// otherwise retryable (quota), but resending the same contributions can
// only merge to the same update: the client reports it at once, by the
// reason, without resending.
TEST(ClientShardLimitTest, AMergedUpdateTooLargeForTheShardIsNotRetried) {
  constexpr uint64_t kNumel = 8192;
  constexpr uint32_t kPerRank = 2000;  // 8000 value bytes each, 16000 merged
  Shards shards(1, absl::Seconds(20), [](aggregator::AggregatorConfig& c) {
    c.max_message_bytes = 12000;
  });
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerSpecification> layers = {{"wide", kNumel}};
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::vector<std::unique_ptr<Client>> clients,
      ConnectRanks(shards, "toolarge", 2, layers, 1, [](ClientOptions& options) {
        options.merge_timeout = absl::Seconds(60);
        options.reconnect_give_up_after = absl::Seconds(60);
      }));
  for (uint32_t rank = 0; rank < 2; ++rank) {
    ENTROGRAD_ASSERT_OK(clients[rank]->SendLayer(
        ConsecutiveRun(0, 0, kNumel, rank * kPerRank, kPerRank)));
  }
  for (uint32_t rank = 0; rank < 2; ++rank) {
    EXPECT_THAT(clients[rank]->WaitMerged(0, 0),
                StatusIs(absl::StatusCode::kResourceExhausted,
                         "the merged update is too large"));
    // One contribution is about 8000 wire bytes; a resend would double it.
    EXPECT_LT(clients[rank]->traffic().uplink_wire_bytes, 2 * 8000)
        << "rank " << rank << " resent a contribution that cannot merge";
  }
}

TEST(ClientEvictionTest, ANewerIncarnationOfTheRankTakesOverAndIsNotEvicted) {
  Shards shards(1);
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerSpecification> layers = TestLayers(1);
  ClientOptions first = TestOptions(shards.addresses(), "twins", 0, 1);
  first.incarnation = 1;
  auto older = Client::Connect(first, layers, 1);
  ENTROGRAD_ASSERT_OK(older);
  ClientOptions second = first;
  second.incarnation = 2;
  auto newer = Client::Connect(second, layers, 1);
  ENTROGRAD_ASSERT_OK(newer);

  // The older one learns it was replaced, and says what to check.
  const absl::StatusOr<MergedLayerUpdate> evicted = (*older)->WaitMerged(0, 0);
  EXPECT_THAT(evicted, StatusIs(absl::StatusCode::kAborted,
                                "taken over by another process"));
  EXPECT_THAT(std::string(evicted.status().message()),
              ::testing::HasSubstr("incarnation 2"));
  EXPECT_THAT(std::string(evicted.status().message()),
              ::testing::HasSubstr("same rank"));
  EXPECT_THAT((*older)->SendLayer(MakeContribution(0, 0, 0, layers[0].numel)),
              StatusIs(absl::StatusCode::kFailedPrecondition, "taken over"));

  // It did not reconnect: the newer one keeps its stream and its rounds.
  ENTROGRAD_ASSERT_OK(
      (*newer)->SendLayer(MakeContribution(0, 0, 0, layers[0].numel)));
  ENTROGRAD_ASSERT_OK((*newer)->WaitMerged(0, 0));
  EXPECT_EQ((*newer)->traffic().reconnects, 0);
}

}  // namespace
}  // namespace entrograd::testing
