// Bad input gets a precise status and changes nothing: refused Joins, bad
// options, malformed contributions (nothing is sent or kept).
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_format.h"
#include "client_lib/transport/client_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "support/wait_for.h"

namespace entrograd::testing {
namespace {

TEST(ClientJoinTest, DifferentInitialParametersAreRefusedNamingTheHash) {
  Shards shards(2);
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerSpecification> layers = TestLayers(3);
  constexpr uint64_t kHash = 0x0123456789ABCDEFull;
  constexpr uint64_t kOtherHash = 0x00000000DEADBEEFull;
  auto rank0 = Client::Connect(
      TestOptions(shards.addresses(), "mismatch", 0, 2), layers, kHash);
  ENTROGRAD_ASSERT_OK(rank0);
  auto rank1 = Client::Connect(
      TestOptions(shards.addresses(), "mismatch", 1, 2), layers, kOtherHash);
  EXPECT_THAT(
      rank1,
      StatusIs(absl::StatusCode::kFailedPrecondition,
               "initial parameter hash 00000000deadbeef vs 0123456789abcdef"));
}

TEST(ClientJoinTest, DifferentLayerTableIsRefused) {
  Shards shards(1);
  ASSERT_TRUE(shards.ok());
  auto rank0 = Client::Connect(TestOptions(shards.addresses(), "table", 0, 2),
                               TestLayers(3), 1);
  ENTROGRAD_ASSERT_OK(rank0);
  std::vector<LayerSpecification> other = TestLayers(3);
  other[1].numel += 1;
  EXPECT_THAT(
      Client::Connect(TestOptions(shards.addresses(), "table", 1, 2), other, 1),
      StatusIs(absl::StatusCode::kFailedPrecondition, "layer 1"));
}

TEST(ClientJoinTest, BadOptionsAreInvalidArgumentBeforeConnecting) {
  const std::vector<std::string> nowhere = {"127.0.0.1:1"};
  struct Case {
    const char* name;
    std::function<void(ClientOptions&)> change;
    const char* field;
  };
  const std::vector<Case> cases = {
      {"no shards", [](ClientOptions& o) { o.shards.clear(); },
       "options.shards"},
      {"repeated shard",
       [](ClientOptions& o) { o.shards.push_back(o.shards[0]); },
       "options.shards"},
      {"job id", [](ClientOptions& o) { o.job_id = "a b"; }, "options.job_id"},
      {"rank", [](ClientOptions& o) { o.rank = 2; }, "options.rank"},
      {"world", [](ClientOptions& o) { o.world_size = 0; },
       "options.world_size"},
      {"applied", [](ClientOptions& o) { o.applied_step = -2; },
       "options.applied_step"},
      {"jitter", [](ClientOptions& o) { o.reconnect_jitter = 1.5; },
       "options.reconnect_jitter"},
      {"timeout",
       [](ClientOptions& o) { o.merge_timeout = absl::ZeroDuration(); },
       "options.merge_timeout"},
      {"client cert", [](ClientOptions& o) { o.tls_client_cert = "PEM"; },
       "tls_client_key"},
      {"token", [](ClientOptions& o) { o.token = "a\nb"; }, "options.token"},
      {"value type",
       [](ClientOptions& o) { o.value_type = static_cast<ValueType>(9); },
       "options.value_type"},
  };
  for (const Case& c : cases) {
    ClientOptions options = TestOptions(nowhere, "job", 0, 2);
    c.change(options);
    EXPECT_THAT(Client::Connect(options, TestLayers(1), 1),
                StatusIs(absl::StatusCode::kInvalidArgument, c.field))
        << c.name;
  }
  EXPECT_THAT(
      Client::Connect(TestOptions(nowhere, "job", 0, 1), {}, 1),
      StatusIs(absl::StatusCode::kInvalidArgument, "layer table is empty"));
  EXPECT_THAT(
      Client::Connect(TestOptions(nowhere, "job", 0, 1), {{"zero", 0}}, 1),
      StatusIs(absl::StatusCode::kInvalidArgument, "\"zero\""));
}

TEST(ClientSendLayerTest, BadContributionsAreInvalidArgumentAndNothingIsSent) {
  Shards shards(1);
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerSpecification> layers = TestLayers(2);
  auto client =
      Client::Connect(TestOptions(shards.addresses(), "bad", 0, 1), layers, 1);
  ENTROGRAD_ASSERT_OK(client);
  const uint64_t numel = layers[1].numel;
  const LayerContribution good = MakeContribution(0, 0, 1, numel);
  // The job's table is held from its Join on; nothing more may be.
  ASSERT_TRUE(WaitFor([&] { return shards.server(0).registry().JobCount() == 1; }));
  const int64_t table_bytes = shards.server(0).registry().BytesHeld();

  LayerContribution unknown_layer = good;
  unknown_layer.layer = 7;
  EXPECT_THAT(
      (*client)->SendLayer(unknown_layer),
      StatusIs(absl::StatusCode::kInvalidArgument, "layer 7 is unknown"));
  LayerContribution wrong_numel = good;
  wrong_numel.numel = numel + 1;
  EXPECT_THAT(
      (*client)->SendLayer(wrong_numel),
      StatusIs(absl::StatusCode::kInvalidArgument, "does not match layer 1"));
  LayerContribution nan = good;
  nan.values[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THAT((*client)->SendLayer(nan),
              StatusIs(absl::StatusCode::kInvalidArgument, "NaN"));
  LayerContribution inf = good;
  inf.values[0] = -std::numeric_limits<float>::infinity();
  EXPECT_THAT((*client)->SendLayer(inf),
              StatusIs(absl::StatusCode::kInvalidArgument, "Inf"));
  LayerContribution counts = good;
  counts.values.pop_back();
  EXPECT_THAT((*client)->SendLayer(counts),
              StatusIs(absl::StatusCode::kInvalidArgument, "indices but"));
  LayerContribution unsorted = good;
  std::swap(unsorted.indices[0], unsorted.indices[1]);
  EXPECT_THAT((*client)->SendLayer(unsorted),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "not greater than previous index"));
  LayerContribution out_of_range = good;
  out_of_range.indices.back() = static_cast<uint32_t>(numel);
  EXPECT_THAT((*client)->SendLayer(out_of_range),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  LayerContribution short_dense = MakeContribution(0, 0, 0, layers[0].numel);
  short_dense.values.pop_back();
  EXPECT_THAT((*client)->SendLayer(short_dense),
              StatusIs(absl::StatusCode::kInvalidArgument, "dense"));
  LayerContribution negative_step = good;
  negative_step.step = -1;
  EXPECT_THAT((*client)->SendLayer(negative_step),
              StatusIs(absl::StatusCode::kInvalidArgument, "negative"));
  EXPECT_THAT(
      (*client)->WaitMerged(0, 9),
      StatusIs(absl::StatusCode::kInvalidArgument, "layer 9 is unknown"));

  // Nothing is held, nothing was kept: the good contribution for the same
  // (step, layer) is still accepted and merged.
  EXPECT_EQ(shards.server(0).registry().RoundsInFlight(), 0);
  EXPECT_EQ(shards.server(0).registry().BytesHeld(), table_bytes);
  ENTROGRAD_ASSERT_OK((*client)->SendLayer(good));
  auto merged = (*client)->WaitMerged(0, 1);
  ENTROGRAD_ASSERT_OK(merged);
  EXPECT_TRUE(
      BitwiseEqual(ToDense(merged->payload), ReferenceMergeDense({good})));
  // And nothing went out but the good one: the stream is in order, so
  // anything the refused calls had queued was written before it, and its
  // merge is the event after which the count is final. Uplink dense bytes
  // are 4 * numel per update handed to gRPC.
  EXPECT_EQ((*client)->traffic().uplink_dense_bytes,
            4 * static_cast<int64_t>(numel));

  // Steps already applied are refused.
  (*client)->MarkApplied(0);
  EXPECT_THAT(
      (*client)->SendLayer(MakeContribution(0, 0, 0, layers[0].numel)),
      StatusIs(absl::StatusCode::kFailedPrecondition, "already applied"));
  EXPECT_THAT(
      (*client)->WaitMerged(0, 1),
      StatusIs(absl::StatusCode::kFailedPrecondition, "already applied"));
}

TEST(ClientSendLayerTest, UpdateLargerThanTheMessageLimitIsRefused) {
  Shards shards(1);
  ASSERT_TRUE(shards.ok());
  std::vector<LayerSpecification> layers = {{"big", 4096}};
  ClientOptions options = TestOptions(shards.addresses(), "big", 0, 1);
  options.max_message_bytes = 4096;
  auto client = Client::Connect(options, layers, 1);
  ENTROGRAD_ASSERT_OK(client);
  EXPECT_THAT(
      (*client)->SendLayer(DenseContribution(0, 0, 4096, 0.5f)),
      StatusIs(absl::StatusCode::kResourceExhausted, "max_message_bytes"));
  EXPECT_EQ((*client)->traffic().uplink_wire_bytes, 0);
}

}  // namespace
}  // namespace entrograd::testing
