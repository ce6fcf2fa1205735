// Client::traffic(): wire bytes are the payload bytes that crossed the wire,
// dense bytes 4 * numel per layer, in each direction.
#include <thread>
#include <vector>

#include "client_lib/transport/client_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::testing {
namespace {

TEST(ClientTrafficTest, CountsPayloadBytesBothWays) {
  constexpr uint32_t kWorld = 2;
  constexpr int64_t kSteps = 3;
  Shards shards(2);
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerSpecification> layers = TestLayers(4);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::vector<std::unique_ptr<Client>> clients,
                                 ConnectRanks(shards, "traffic", kWorld, layers, 3));
  std::vector<WorkerRun> runs(kWorld);
  std::vector<std::thread> threads;
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    threads.emplace_back([&, rank] {
      runs[rank] = RunWorker(*clients[rank], rank, kSteps, layers);
    });
  }
  for (auto& thread : threads) thread.join();

  int64_t dense_bytes = 0;
  for (const LayerSpecification& layer : layers)
    dense_bytes += 4 * layer.numel * kSteps;
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    ENTROGRAD_ASSERT_OK(runs[rank].status);
    // What this rank encoded, encoded again here the same way.
    int64_t uplink = 0;
    for (int64_t step = 0; step < kSteps; ++step) {
      for (uint32_t l = 0; l < layers.size(); ++l) {
        const LayerContribution c =
            MakeContribution(rank, step, l, layers[l].numel);
        auto payload = c.dense ? EncodeDense(c.values)
                               : EncodeSparse(c.numel, c.indices, c.values);
        ASSERT_TRUE(payload.ok());
        uplink += payload->WireBytes();
      }
    }
    int64_t downlink = 0;
    for (const auto& [key, merged] : runs[rank].merged)
      downlink += merged.wire_bytes;
    const ClientTraffic traffic = runs[rank].traffic;
    EXPECT_EQ(traffic.uplink_wire_bytes, uplink) << "rank " << rank;
    EXPECT_EQ(traffic.uplink_dense_bytes, dense_bytes);
    EXPECT_EQ(traffic.downlink_wire_bytes, downlink);
    EXPECT_EQ(traffic.downlink_dense_bytes, dense_bytes);
    EXPECT_LT(traffic.uplink_wire_bytes, traffic.uplink_dense_bytes);
    EXPECT_EQ(traffic.reconnects, 0);
    EXPECT_EQ(traffic.saturated_values, 0);
  }
  // The merged payload bytes are what the shard encoded: equal on all ranks.
  EXPECT_EQ(runs[0].traffic.downlink_wire_bytes,
            runs[1].traffic.downlink_wire_bytes);
}

TEST(ClientTrafficTest, HalfPrecisionHalvesValueBytesAndCountsSaturation) {
  Shards shards(1);
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerSpecification> layers = {{"w", 1000}};
  ClientOptions options = TestOptions(shards.addresses(), "half", 0, 1);
  options.value_type = ValueType::kF16;
  auto client = Client::Connect(options, layers, 3);
  ENTROGRAD_ASSERT_OK(client);
  LayerContribution c;
  c.step = 0;
  c.layer = 0;
  c.numel = 1000;
  c.indices = {1, 5, 900};
  c.values = {0.5f, 1e6f, -2.0f};  // 1e6 is beyond binary16's 65504
  ENTROGRAD_ASSERT_OK((*client)->SendLayer(c));
  auto merged = (*client)->WaitMerged(0, 0);
  ENTROGRAD_ASSERT_OK(merged);
  EXPECT_EQ(merged->payload.values,
            (std::vector<float>{0.5f, 65504.0f, -2.0f}));
  const ClientTraffic traffic = (*client)->traffic();
  EXPECT_EQ(traffic.saturated_values, 1);
  auto expected = EncodeSparse(c.numel, c.indices, c.values,
                               {ValueType::kF16, std::nullopt});
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(traffic.uplink_wire_bytes, expected->WireBytes());
  EXPECT_EQ(traffic.uplink_dense_bytes, 4000);
}

// FP8 e5m2 end to end over a real shard: one byte a value each way, the
// merge comes back in e5m2 (the only type the round was sent in), and the
// client reports the type so the optimizer can keep the rounding error.
TEST(ClientTrafficTest, E5M2SendsAndReceivesOneByteValues) {
  Shards shards(1);
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerSpecification> layers = {{"w", 1000}};
  ClientOptions options = TestOptions(shards.addresses(), "fp8", 0, 1);
  options.value_type = ValueType::kE5M2;
  auto client = Client::Connect(options, layers, 3);
  ENTROGRAD_ASSERT_OK(client);
  EXPECT_EQ((*client)->value_type(), ValueType::kE5M2);
  LayerContribution c;
  c.step = 0;
  c.layer = 0;
  c.numel = 1000;
  c.indices = {1, 5, 900};
  c.values = {0.1f, 1e6f, -2.0f};  // 0.1 rounds; 1e6 is beyond 57344
  ENTROGRAD_ASSERT_OK((*client)->SendLayer(c));
  auto merged = (*client)->WaitMerged(0, 0);
  ENTROGRAD_ASSERT_OK(merged);
  EXPECT_EQ(merged->payload.value_type, ValueType::kE5M2);
  EXPECT_EQ(merged->payload.values,
            (std::vector<float>{0.09375f, 57344.0f, -2.0f}));
  const ClientTraffic traffic = (*client)->traffic();
  EXPECT_EQ(traffic.saturated_values, 1);
  auto expected = EncodeSparse(c.numel, c.indices, c.values,
                               {ValueType::kE5M2, std::nullopt});
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(expected->value_bytes.size(), 3u);
  EXPECT_EQ(traffic.uplink_wire_bytes, expected->WireBytes());
  EXPECT_EQ(traffic.downlink_wire_bytes, expected->WireBytes());
}

}  // namespace
}  // namespace entrograd::testing
