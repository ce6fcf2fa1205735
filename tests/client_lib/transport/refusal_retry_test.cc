// Refusals the protocol allows to retry: OUT_OF_RANGE (a step too far ahead
// of the slowest rank) and RESOURCE_EXHAUSTED (the shard's memory quota).
// The client resends the same contribution after a backoff delay, so the
// round still completes once the condition clears.
#include <vector>

#include "client_lib/transport/client_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "support/wait_for.h"

namespace entrograd::testing {
namespace {

TEST(ClientRefusalRetryTest, StepTooFarAheadIsResentOnceTheJobCatchesUp) {
  Shards shards(1, absl::Seconds(20), [](aggregator::AggregatorConfig& config) {
    config.registry.max_steps_ahead = 1;  // steps up to slowest applied + 2
  });
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerSpecification> layers = {{"w", 300}};
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::vector<std::unique_ptr<Client>> clients,
                                 ConnectRanks(shards, "ahead", 2, layers, 1));
  // Rank 0 runs ahead: steps 0, 1 and 2 while nobody applied anything.
  // Step 2 is beyond -1 + 1 + 1 = 1: refused with OUT_OF_RANGE, retried.
  for (int64_t step = 0; step < 3; ++step) {
    ENTROGRAD_ASSERT_OK(
        clients[0]->SendLayer(MakeContribution(0, step, 0, 300)));
  }
  // The refusal came and the retry went out: a fourth update of 4 * 300
  // dense bytes after the three sends (nothing else resends here).
  ASSERT_TRUE(WaitFor([&] {
    return clients[0]->traffic().uplink_dense_bytes > 3 * 4 * 300;
  })) << "step 2 was never refused and resent";
  // Rank 1 catches up step by step; each of its updates tells the shard
  // what it applied, and rank 0's retries tell what rank 0 applied.
  for (int64_t step = 0; step < 3; ++step) {
    ENTROGRAD_ASSERT_OK(
        clients[1]->SendLayer(MakeContribution(1, step, 0, 300)));
    for (uint32_t rank = 0; rank < 2; ++rank) {
      auto merged = clients[rank]->WaitMerged(step, 0);
      ENTROGRAD_ASSERT_OK(merged) << "rank " << rank << ", step " << step;
      EXPECT_TRUE(BitwiseEqual(
          ToDense(merged->payload),
          ReferenceMergeDense({MakeContribution(0, step, 0, 300),
                               MakeContribution(1, step, 0, 300)})));
      clients[rank]->MarkApplied(step);
    }
  }
}

TEST(ClientRefusalRetryTest, MemoryQuotaRefusalIsResentOnceMemoryFrees) {
  // Room for one dense layer of 1000 floats (4000 bytes) and its merge
  // (counted before merging), with the job tables, not for one more.
  Shards shards(1, absl::Milliseconds(500),
                [](aggregator::AggregatorConfig& config) {
                  config.registry.memory_quota_bytes =
                      4000 + aggregator::RoundOverheadBytes(1) +
                      aggregator::MergeBytesBound(1000, 1000) + 3000;
                });
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerSpecification> layers = {{"w", 1000}};
  // Job "hog" (world 2) holds the memory with an incomplete round, until
  // the round timeout aborts it.
  auto hog =
      Client::Connect(TestOptions(shards.addresses(), "hog", 0, 2), layers, 1);
  ENTROGRAD_ASSERT_OK(hog);
  LayerContribution dense = MakeContribution(0, 0, 0, 1000);
  ASSERT_TRUE(dense.dense);
  ENTROGRAD_ASSERT_OK((*hog)->SendLayer(dense));
  ASSERT_TRUE(
      WaitFor([&] { return shards.server(0).registry().BytesHeld() > 4000; }));
  // Job "solo" (world 1) is refused for now, retries, and completes after
  // the hog's round is aborted.
  auto solo =
      Client::Connect(TestOptions(shards.addresses(), "solo", 0, 1), layers, 1);
  ENTROGRAD_ASSERT_OK(solo);
  ENTROGRAD_ASSERT_OK((*solo)->SendLayer(dense));
  auto merged = (*solo)->WaitMerged(0, 0);
  ENTROGRAD_ASSERT_OK(merged);
  EXPECT_TRUE(
      BitwiseEqual(ToDense(merged->payload), ReferenceMergeDense({dense})));
  EXPECT_GT((*solo)->traffic().uplink_wire_bytes, 4000) << "sent only once";
  EXPECT_THAT((*hog)->WaitMerged(0, 0),
              StatusIs(absl::StatusCode::kAborted, "rank(s) 1"));
}

}  // namespace
}  // namespace entrograd::testing
