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

// One rank alone sends one contribution of layer "w" (1000 elements) in
// `type` through a real shard and waits for the merge: what a narrow value
// type does to the values, both ways, and to the counters.
struct NarrowRound {
  LayerContribution sent;
  MergedLayerUpdate merged;
  ClientTraffic traffic;
  ValueType reported = ValueType::kF32;  // the client's value_type()
};

void RunNarrowRound(ValueType type, std::vector<float> values,
                    NarrowRound* out) {
  Shards shards(1);
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerSpecification> layers = {{"w", 1000}};
  ClientOptions options = TestOptions(shards.addresses(),
                                      std::string(ValueTypeName(type)), 0, 1);
  options.value_type = type;
  auto client = Client::Connect(options, layers, 3);
  ENTROGRAD_ASSERT_OK(client);
  out->reported = (*client)->value_type();
  out->sent.step = 0;
  out->sent.layer = 0;
  out->sent.numel = 1000;
  out->sent.indices = {1, 5, 900};
  out->sent.values = std::move(values);
  ENTROGRAD_ASSERT_OK((*client)->SendLayer(out->sent));
  auto merged = (*client)->WaitMerged(0, 0);
  ENTROGRAD_ASSERT_OK(merged);
  out->merged = *std::move(merged);
  out->traffic = (*client)->traffic();
}

// The uplink bytes are those of the contribution encoded in `type`.
void ExpectUplinkBytesOf(const NarrowRound& round, ValueType type) {
  auto expected = EncodeSparse(round.sent.numel, round.sent.indices,
                               round.sent.values, {type, std::nullopt});
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(expected->value_bytes.size(),
            round.sent.values.size() * ValueTypeBytes(type));
  EXPECT_EQ(round.traffic.uplink_wire_bytes, expected->WireBytes());
  EXPECT_EQ(round.traffic.uplink_dense_bytes, 4000);
}

TEST(ClientTrafficTest, HalfPrecisionHalvesValueBytesAndCountsSaturation) {
  NarrowRound round;
  // 1e6 is beyond binary16's 65504.
  RunNarrowRound(ValueType::kF16, {0.5f, 1e6f, -2.0f}, &round);
  EXPECT_EQ(round.reported, ValueType::kF16);
  EXPECT_EQ(round.merged.payload.values,
            (std::vector<float>{0.5f, 65504.0f, -2.0f}));
  EXPECT_EQ(round.traffic.saturated_values, 1);
  ExpectUplinkBytesOf(round, ValueType::kF16);
}

// FP8 e5m2: one byte a value each way, the merge comes back in e5m2 (the
// only type the round was sent in), and the client reports the type so the
// optimizer can keep the rounding error.
TEST(ClientTrafficTest, E5M2SendsAndReceivesOneByteValues) {
  NarrowRound round;
  // 0.1 rounds to 1.5 * 2^-4; 1e6 is beyond e5m2's 57344.
  RunNarrowRound(ValueType::kE5M2, {0.1f, 1e6f, -2.0f}, &round);
  EXPECT_EQ(round.reported, ValueType::kE5M2);
  EXPECT_EQ(round.merged.payload.value_type, ValueType::kE5M2);
  EXPECT_EQ(round.merged.payload.values,
            (std::vector<float>{0.09375f, 57344.0f, -2.0f}));
  EXPECT_EQ(round.traffic.saturated_values, 1);
  ExpectUplinkBytesOf(round, ValueType::kE5M2);
  EXPECT_EQ(round.traffic.downlink_wire_bytes, round.traffic.uplink_wire_bytes);
}

// One rank alone sends 400 indices, gaps of 200 to 400 after the first (two
// varint bytes each), through a real shard, with or without gap_range.
struct GapRangeRound {
  MergedLayerUpdate merged;
  ClientTraffic traffic;
};

void RunGapRangeRound(bool gap_range_indices, GapRangeRound* out) {
  Shards shards(1);
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerSpecification> layers = {{"w", 200000}};
  ClientOptions options = TestOptions(
      shards.addresses(), gap_range_indices ? "gap-range" : "older", 0, 1);
  options.gap_range_indices = gap_range_indices;
  auto client = Client::Connect(options, layers, 3);
  ENTROGRAD_ASSERT_OK(client);
  LayerContribution sent;
  sent.numel = 200000;
  for (uint32_t j = 0, index = 7; j < 400; ++j, index += 200 + (j * 37) % 201) {
    sent.indices.push_back(index);
    sent.values.push_back(0.25f * static_cast<float>(j % 9) - 1.0f);
  }
  ENTROGRAD_ASSERT_OK((*client)->SendLayer(sent));
  auto merged = (*client)->WaitMerged(0, 0);
  ENTROGRAD_ASSERT_OK(merged);
  out->merged = *std::move(merged);
  out->traffic = (*client)->traffic();
}

// gap_range changes the bytes, both ways, and nothing else.
TEST(ClientTrafficTest, GapRangeShrinksTheIndicesBothWaysAndChangesNoValue) {
  GapRangeRound with, without;
  RunGapRangeRound(true, &with);
  RunGapRangeRound(false, &without);
  EXPECT_EQ(with.merged.payload.indices, without.merged.payload.indices);
  EXPECT_EQ(with.merged.payload.values, without.merged.payload.values);
  EXPECT_EQ(with.merged.payload.indices.size(), 400u);
  // 400 values of 4 bytes; indices of 1 + 399 * 2 varint bytes against
  // about 1.1 range-coded bytes each.
  EXPECT_EQ(without.traffic.uplink_wire_bytes, 1600 + 799);
  EXPECT_LT(with.traffic.uplink_wire_bytes, 1600 + 600);
  EXPECT_EQ(with.traffic.downlink_wire_bytes, with.traffic.uplink_wire_bytes);
  EXPECT_EQ(without.traffic.downlink_wire_bytes,
            without.traffic.uplink_wire_bytes);
}

}  // namespace
}  // namespace entrograd::testing
