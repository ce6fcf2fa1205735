// The client against a fake shard that breaks the protocol: a shard that
// accepts every Join and then drops the stream (the give-up clock is not
// reset by a Join), and a shard that sends a merged update the client never
// asked for (a protocol error that ends the client, nothing stored).
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client_lib/transport/client_test_util.h"
#include "entrograd/client.h"
#include "entrograd/v1/aggregator.grpc.pb.h"
#include "entrograd/wire/grpc_status.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::testing {
namespace {

using ShardSide =
    grpc::ServerReaderWriter<v1::AggregatorMessage, v1::WorkerMessage>;

// A one-method Aggregator on 127.0.0.1:0: reads the Join, answers a
// JoinAck, then runs `after_ack` and ends the stream with what it returns.
class FakeShard : public v1::Aggregator::Service {
 public:
  using AfterAck = std::function<grpc::Status(ShardSide*)>;

  // `end_reason`, when set, is sent as the stream's StreamEndReason
  // trailing metadata.
  explicit FakeShard(AfterAck after_ack, std::string end_reason = "")
      : after_ack_(std::move(after_ack)), end_reason_(std::move(end_reason)) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~FakeShard() override { server_->Shutdown(absl::ToChronoTime(absl::Now())); }

  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  bool ok() const { return server_ != nullptr && port_ != 0; }
  int joins() const { return joins_.load(); }

  grpc::Status Exchange(grpc::ServerContext* context,
                        ShardSide* stream) override {
    if (!end_reason_.empty()) {
      context->AddTrailingMetadata(std::string(kStreamEndReasonKey),
                                   end_reason_);
    }
    v1::WorkerMessage join;
    if (!stream->Read(&join) || !join.has_join()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no Join");
    }
    joins_.fetch_add(1);
    v1::AggregatorMessage ack;
    ack.mutable_join_ack()->set_merged_step(-1);
    ack.mutable_join_ack()->set_shard_name("fake");
    stream->Write(ack);
    return after_ack_(stream);
  }

 private:
  AfterAck after_ack_;
  std::string end_reason_;
  std::atomic<int> joins_{0};
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

TEST(ClientGiveUpTest, ShardThatDropsEveryStreamAfterJoinFailsTheClient) {
  FakeShard shard([](ShardSide*) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "dropped after Join");
  });
  ASSERT_TRUE(shard.ok());
  const std::vector<LayerSpecification> layers = TestLayers(1);
  ClientOptions options = TestOptions({shard.address()}, "flappy", 0, 1);
  options.reconnect_give_up_after = absl::Seconds(1);
  options.reconnect_max_backoff = absl::Milliseconds(100);
  options.merge_timeout = absl::Seconds(20);
  auto client = Client::Connect(options, layers, 1);
  ENTROGRAD_ASSERT_OK(client);
  const absl::Time start = absl::Now();
  ENTROGRAD_ASSERT_OK(
      (*client)->SendLayer(MakeContribution(0, 0, 0, layers[0].numel)));
  EXPECT_THAT((*client)->WaitMerged(0, 0),
              StatusIs(absl::StatusCode::kUnavailable, "without progress"));
  // Give-up period plus backoff slack, far below merge_timeout.
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  // It did keep trying in the meantime: every Join was accepted.
  EXPECT_GE(shard.joins(), 3);
  EXPECT_THAT((*client)->SendLayer(MakeContribution(0, 1, 0, layers[0].numel)),
              StatusIs(absl::StatusCode::kFailedPrecondition, "UNAVAILABLE"));
}

// A takeover is told by the stream's end reason (trailing metadata), never
// by the status text: the same text without the reason is an ordinary
// ABORTED end, and the reason with any text is a takeover.
TEST(ClientEvictionTest, TheEndReasonNotTheMessageTextMeansTakenOver) {
  const std::vector<LayerSpecification> layers = TestLayers(1);
  FakeShard text_only([](ShardSide*) {
    return grpc::Status(grpc::StatusCode::ABORTED,
                        "rank 0 was replaced by incarnation 9");
  });
  FakeShard with_reason(
      [](ShardSide*) {
        return grpc::Status(grpc::StatusCode::ABORTED, "gone");
      },
      v1::StreamEndReason_Name(v1::STREAM_END_REASON_RANK_REPLACED));
  ASSERT_TRUE(text_only.ok());
  ASSERT_TRUE(with_reason.ok());

  auto plain = Client::Connect(TestOptions({text_only.address()}, "t", 0, 1),
                               layers, 1);
  ENTROGRAD_ASSERT_OK(plain);
  const absl::Status plain_end = (*plain)->WaitMerged(0, 0).status();
  EXPECT_THAT(plain_end, StatusIs(absl::StatusCode::kAborted,
                                  "replaced by incarnation 9"));
  EXPECT_THAT(std::string(plain_end.message()),
              ::testing::Not(::testing::HasSubstr("taken over")));

  auto taken = Client::Connect(TestOptions({with_reason.address()}, "r", 0, 1),
                               layers, 1);
  ENTROGRAD_ASSERT_OK(taken);
  EXPECT_THAT((*taken)->WaitMerged(0, 0),
              StatusIs(absl::StatusCode::kAborted,
                       "taken over by another process"));
  // Neither reconnected: ABORTED is final.
  EXPECT_EQ(text_only.joins(), 1);
  EXPECT_EQ(with_reason.joins(), 1);
}

// What the fake shard answers to the first LayerUpdate.
struct BadMerged {
  std::string name;
  std::function<void(v1::MergedLayer&)> corrupt;
  std::string expected_message;
};

class BadMergedLayerTest : public ::testing::TestWithParam<BadMerged> {};

TEST_P(BadMergedLayerTest, IsAProtocolErrorNamingTheFaultAndNotStored) {
  const BadMerged& bad = GetParam();
  FakeShard shard([&bad](ShardSide* stream) {
    v1::WorkerMessage update;
    if (!stream->Read(&update) || !update.has_layer_update()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no update");
    }
    // Echo the contribution as the merged update of a world of one, then
    // break it.
    v1::AggregatorMessage reply;
    v1::MergedLayer* merged = reply.mutable_merged_layer();
    merged->set_step(update.layer_update().step());
    merged->set_layer_index(update.layer_update().layer_index());
    *merged->mutable_payload() = update.layer_update().payload();
    merged->set_contributors(1);
    bad.corrupt(*merged);
    stream->Write(reply);
    // The client ends the stream.
    while (stream->Read(&update)) {
    }
    return grpc::Status::OK;
  });
  ASSERT_TRUE(shard.ok());
  const std::vector<LayerSpecification> layers = TestLayers(2);
  ClientOptions options = TestOptions({shard.address()}, "bad", 0, 1);
  options.merge_timeout = absl::Seconds(10);
  auto client = Client::Connect(options, layers, 1);
  ENTROGRAD_ASSERT_OK(client);
  const absl::Time start = absl::Now();
  ENTROGRAD_ASSERT_OK(
      (*client)->SendLayer(MakeContribution(0, 0, 1, layers[1].numel)));
  EXPECT_THAT((*client)->WaitMerged(0, 1),
              StatusIs(absl::StatusCode::kInternal, bad.expected_message));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  // Fatal: nothing was stored for any slot, and the client sends no more.
  EXPECT_THAT((*client)->WaitMerged(0, 0),
              StatusIs(absl::StatusCode::kInternal, "breaks the protocol"));
  EXPECT_THAT((*client)->SendLayer(MakeContribution(0, 0, 0, layers[0].numel)),
              StatusIs(absl::StatusCode::kFailedPrecondition, "INTERNAL"));
  // No reconnect after a protocol error.
  EXPECT_EQ(shard.joins(), 1);
}

INSTANTIATE_TEST_SUITE_P(
    Faults, BadMergedLayerTest,
    ::testing::Values(
        BadMerged{"LayerOutOfRange",
                  [](v1::MergedLayer& m) { m.set_layer_index(7); },
                  "layer 7 that breaks the protocol: the layer table has 2"},
        BadMerged{"StepNeverSent", [](v1::MergedLayer& m) { m.set_step(5); },
                  "the highest step sent for that layer is 0"},
        BadMerged{"WrongContributors",
                  [](v1::MergedLayer& m) { m.set_contributors(3); },
                  "3 contributors, world_size is 1"},
        BadMerged{"WrongNumel",
                  [](v1::MergedLayer& m) {
                    m.mutable_payload()->set_numel(m.payload().numel() + 1);
                  },
                  "elements, the layer has"}),
    [](const ::testing::TestParamInfo<BadMerged>& info) {
      return info.param.name;
    });

}  // namespace
}  // namespace entrograd::testing
