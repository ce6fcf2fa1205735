// JobRegistry against recording sinks, no gRPC: the order of what a stream
// receives, stale member ids of ended jobs, and merged updates too large to
// send.
#include "aggregator/rounds/job_registry.h"

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "aggregator/support/random_updates.h"
#include "aggregator/support/sparse_vector.h"
#include "aggregator/support/test_worker.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::testing {
namespace {

using aggregator::JobRegistry;
using aggregator::MemberId;
using aggregator::RegistryOptions;
using ::testing::HasSubstr;

constexpr uint64_t kNumel = 100000;

// Records what the registry sends, in order. `on_close`, when set, runs
// inside Close (the registry calls it without its lock held).
class RecordingSink : public aggregator::StreamSink {
 public:
  std::function<void()> on_close;

  void Send(std::shared_ptr<const v1::AggregatorMessage> message) override {
    absl::MutexLock lock(&mutex_);
    messages_.push_back(std::move(message));
  }
  void Close(const absl::Status& status) override {
    {
      absl::MutexLock lock(&mutex_);
      closes_.push_back(status);
    }
    if (on_close) on_close();
  }
  std::vector<std::shared_ptr<const v1::AggregatorMessage>> messages() {
    absl::MutexLock lock(&mutex_);
    return messages_;
  }
  std::vector<absl::Status> closes() {
    absl::MutexLock lock(&mutex_);
    return closes_;
  }

 private:
  absl::Mutex mutex_;
  std::vector<std::shared_ptr<const v1::AggregatorMessage>> messages_
      ABSL_GUARDED_BY(mutex_);
  std::vector<absl::Status> closes_ ABSL_GUARDED_BY(mutex_);
};

JoinSpec Spec(const std::string& job, uint32_t rank, uint32_t world_size,
              uint64_t incarnation = 1) {
  JoinSpec spec;
  spec.job_id = job;
  spec.rank = rank;
  spec.world_size = world_size;
  spec.incarnation = incarnation;
  spec.layers = {{"w", kNumel}};
  return spec;
}

v1::LayerUpdate Update(int64_t step, uint32_t seed, size_t count = 20) {
  return MakeUpdate(step, 0, EncodeOrDie(RandomSparse(kNumel, count, seed)));
}

class JobRegistryTest : public ::testing::Test {
 protected:
  explicit JobRegistryTest(RegistryOptions options = {})
      : registry_(std::move(options), /*metrics=*/nullptr) {}

  // Joins with a fresh recording sink; fails the test on error.
  MemberId Join(const JoinSpec& spec, std::shared_ptr<RecordingSink>* sink) {
    *sink = std::make_shared<RecordingSink>();
    absl::StatusOr<MemberId> id =
        registry_.Join(MakeJoin(spec), std::nullopt, *sink);
    EXPECT_TRUE(id.ok()) << id.status();
    return id.ok() ? *id : MemberId{};
  }

  JobRegistry registry_;
};

TEST_F(JobRegistryTest, JoinQueuesTheAckOnTheSink) {
  std::shared_ptr<RecordingSink> sink;
  Join(Spec("ack", 0, 1), &sink);
  ASSERT_EQ(sink->messages().size(), 1u);
  EXPECT_TRUE(sink->messages()[0]->has_join_ack());
  EXPECT_EQ(sink->messages()[0]->join_ack().merged_step(), -1);
}

// A rank reconnects while its round is one contribution short, and the
// last contribution arrives (on another thread, in production) after Join
// registered the new stream but before Join returned: the registry closes
// the replaced stream in that window, and its Close completes the round.
// The new stream must still see its JoinAck first.
TEST_F(JobRegistryTest, JoinAckPrecedesAMergedLayerThatCompletesDuringJoin) {
  std::shared_ptr<RecordingSink> rank0, rank1_old, rank1_new;
  const MemberId id0 = Join(Spec("order", 0, 2), &rank0);
  const MemberId id1_old = Join(Spec("order", 1, 2), &rank1_old);
  ENTROGRAD_ASSERT_OK(registry_.Contribute(id1_old, Update(0, 1)));
  absl::Status last_contribution = absl::UnknownError("not sent");
  rank1_old->on_close = [&] {
    last_contribution = registry_.Contribute(id0, Update(0, 2));
  };
  Join(Spec("order", 1, 2, /*incarnation=*/2), &rank1_new);
  ENTROGRAD_ASSERT_OK(last_contribution);

  for (const auto& sink : {rank0, rank1_new}) {
    const auto messages = sink->messages();
    ASSERT_EQ(messages.size(), 2u);
    EXPECT_TRUE(messages[0]->has_join_ack()) << messages[0]->ShortDebugString();
    EXPECT_TRUE(messages[1]->has_merged_layer())
        << messages[1]->ShortDebugString();
  }
}

// A stream replaced by a newer incarnation keeps its MemberId until its
// reactor ends. If the job ends meanwhile and is created again, smaller, the
// stale id must reach neither the new job's members nor its rounds.
TEST_F(JobRegistryTest, StaleMemberIdOfAnEndedJobIsRefused) {
  std::shared_ptr<RecordingSink> old1, old3_first, old3_second;
  const MemberId stale1 = Join(Spec("gen", 1, 4), &old1);
  const MemberId stale3 = Join(Spec("gen", 3, 4), &old3_first);
  const MemberId id3 = Join(Spec("gen", 3, 4, /*incarnation=*/2), &old3_second);
  ASSERT_EQ(old3_first->closes().size(), 1u) << "the replaced stream closes";
  registry_.Leave(stale1, old1.get());
  registry_.Leave(id3, old3_second.get());
  ASSERT_EQ(registry_.JobCount(), 0);

  // The same job id again, world size 2: rank 1 incarnation 1 exists again.
  std::shared_ptr<RecordingSink> new0, new1;
  const MemberId id0 = Join(Spec("gen", 0, 2), &new0);
  const MemberId id1 = Join(Spec("gen", 1, 2), &new1);
  EXPECT_NE(id1.job_generation, stale1.job_generation);

  for (const MemberId& stale : {stale1, stale3}) {
    EXPECT_THAT(
        registry_.Contribute(stale, Update(0, 3)),
        StatusIs(absl::StatusCode::kFailedPrecondition, "no longer joined"))
        << "rank " << stale.rank;
  }
  registry_.Leave(stale3, old3_first.get());
  registry_.Leave(stale1, old1.get());
  registry_.Leave(stale1, new1.get());  // even naming the new rank's sink
  EXPECT_EQ(registry_.RoundsInFlight(), 0);
  EXPECT_EQ(registry_.ActiveStreams(), 2);
  EXPECT_EQ(registry_.JobCount(), 1);

  // The new job is untouched: its round needs both of its own ranks.
  ENTROGRAD_ASSERT_OK(registry_.Contribute(id0, Update(0, 4)));
  EXPECT_EQ(registry_.RoundsInFlight(), 1);
  ENTROGRAD_ASSERT_OK(registry_.Contribute(id1, Update(0, 5)));
  for (const auto& sink : {new0, new1}) {
    const auto messages = sink->messages();
    ASSERT_EQ(messages.size(), 2u);
    EXPECT_TRUE(messages[1]->has_merged_layer());
    EXPECT_EQ(messages[1]->merged_layer().contributors(), 2u);
  }
}

class SmallMessageRegistryTest : public JobRegistryTest {
 protected:
  static RegistryOptions Small() {
    RegistryOptions options;
    options.max_message_bytes = 2000;
    return options;
  }
  SmallMessageRegistryTest() : JobRegistryTest(Small()) {}
};

// Each contribution fits; their union does not. gRPC would refuse to write
// the merged update and break every stream: the round is aborted instead.
TEST_F(SmallMessageRegistryTest, MergedUpdateTooLargeAbortsTheRoundForAll) {
  std::shared_ptr<RecordingSink> rank0, rank1;
  const MemberId id0 = Join(Spec("big", 0, 2), &rank0);
  const MemberId id1 = Join(Spec("big", 1, 2), &rank1);
  ENTROGRAD_ASSERT_OK(registry_.Contribute(id0, Update(0, 1, 300)));
  ENTROGRAD_ASSERT_OK(registry_.Contribute(id1, Update(0, 2, 300)));

  for (const auto& sink : {rank0, rank1}) {
    const auto messages = sink->messages();
    ASSERT_EQ(messages.size(), 2u);
    ASSERT_TRUE(messages[1]->has_round_error())
        << messages[1]->ShortDebugString().substr(0, 200);
    const v1::RoundError& error = messages[1]->round_error();
    EXPECT_EQ(error.code(),
              static_cast<int>(absl::StatusCode::kResourceExhausted));
    EXPECT_THAT(error.message(), HasSubstr("max_message_bytes = 2000"));
    EXPECT_EQ(error.step(), 0);
  }
  EXPECT_EQ(registry_.RoundsInFlight(), 0);
  EXPECT_EQ(registry_.BytesHeld(), 0);
  // A resend learns the same.
  EXPECT_THAT(
      registry_.Contribute(id0, Update(0, 1, 300)),
      StatusIs(absl::StatusCode::kResourceExhausted, "max_message_bytes"));
}

}  // namespace
}  // namespace entrograd::testing
