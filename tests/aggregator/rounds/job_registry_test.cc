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
#include "aggregator/rounds/round_error.h"
#include "aggregator/support/random_updates.h"
#include "aggregator/support/sparse_vector.h"
#include "aggregator/support/test_worker.h"
#include "entrograd/codec.h"
#include "entrograd/wire/payload_proto.h"
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

// Ranks that send f16 and all accept it get the merged update in f16; one
// rank that accepts only float32 (an older worker) makes it float32 for all.
TEST_F(JobRegistryTest, TheDownlinkIsF16OnlyWhenEveryRankAcceptsIt) {
  for (const bool everyone_accepts : {true, false}) {
    const std::string job = everyone_accepts ? "f16" : "f32-rank";
    std::shared_ptr<RecordingSink> rank0, rank1;
    JoinSpec spec0 = Spec(job, 0, 2), spec1 = Spec(job, 1, 2);
    spec0.accepted_value_types = {v1::VALUE_TYPE_F32, v1::VALUE_TYPE_F16};
    spec1.accepted_value_types = spec0.accepted_value_types;
    if (!everyone_accepts) spec1.accepted_value_types = {v1::VALUE_TYPE_F32};
    const MemberId id0 = Join(spec0, &rank0);
    const MemberId id1 = Join(spec1, &rank1);
    for (const auto& [id, seed] : {std::pair{id0, 1u}, std::pair{id1, 2u}}) {
      const SparseVector sent = RandomSparse(kNumel, 20, seed);
      ENTROGRAD_ASSERT_OK_AND_ASSIGN(
          EncodedPayload payload,
          EncodeSparse(kNumel, sent.indices, sent.values,
                       {ValueType::kF16, std::nullopt}));
      ENTROGRAD_ASSERT_OK(registry_.Contribute(id, MakeUpdate(0, 0, payload)));
    }
    for (const auto& sink : {rank0, rank1}) {
      const auto messages = sink->messages();
      ASSERT_EQ(messages.size(), 2u) << job;
      ASSERT_TRUE(messages[1]->has_merged_layer()) << job;
      EXPECT_EQ(messages[1]->merged_layer().payload().value_type(),
                everyone_accepts ? v1::VALUE_TYPE_F16 : v1::VALUE_TYPE_F32)
          << job;
    }
  }
}

// Ranks that all list GAP_RANGE get the merged update range coded where
// that is smallest; one rank that does not (an older worker) gets the
// older encodings, and so does everyone else. The indices are the same.
// The uplinks travel range coded either way: a shard decodes everything.
TEST_F(JobRegistryTest, TheDownlinkIsGapRangeOnlyWhenEveryRankAcceptsIt) {
  std::vector<uint32_t> merged_indices[2];
  for (const bool everyone_accepts : {true, false}) {
    const std::string job = everyone_accepts ? "gap-range" : "older-rank";
    std::shared_ptr<RecordingSink> rank0, rank1;
    JoinSpec spec0 = Spec(job, 0, 2), spec1 = Spec(job, 1, 2);
    spec0.accepted_index_encodings = {v1::INDEX_ENCODING_GAP_RANGE};
    if (everyone_accepts) spec1.accepted_index_encodings = {v1::INDEX_ENCODING_GAP_RANGE};
    const MemberId id0 = Join(spec0, &rank0);
    const MemberId id1 = Join(spec1, &rank1);
    for (const auto& [id, seed] : {std::pair{id0, 1u}, std::pair{id1, 2u}}) {
      const SparseVector sent = RandomSparse(kNumel, 200, seed);
      EncodeOptions options;
      options.index_encoding = IndexEncoding::kGapRange;
      ENTROGRAD_ASSERT_OK_AND_ASSIGN(
          EncodedPayload payload,
          EncodeSparse(kNumel, sent.indices, sent.values, options));
      ENTROGRAD_ASSERT_OK(registry_.Contribute(id, MakeUpdate(0, 0, payload)));
    }
    for (const auto& sink : {rank0, rank1}) {
      const auto messages = sink->messages();
      ASSERT_EQ(messages.size(), 2u) << job;
      ASSERT_TRUE(messages[1]->has_merged_layer()) << job;
      const v1::SparsePayload& merged = messages[1]->merged_layer().payload();
      EXPECT_EQ(merged.index_encoding(),
                everyone_accepts ? v1::INDEX_ENCODING_GAP_RANGE
                                 : v1::INDEX_ENCODING_DELTA_VARINT)
          << job;
      ENTROGRAD_ASSERT_OK_AND_ASSIGN(DecodedPayload decoded,
                                     DecodePayload(PayloadViewOfProto(merged)));
      EXPECT_GT(decoded.indices.size(), 200u) << job;  // the ranks' union
      merged_indices[everyone_accepts ? 0 : 1] = decoded.indices;
    }
  }
  EXPECT_EQ(merged_indices[0], merged_indices[1]);
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
  // A resend learns the same.
  absl::Status resend = registry_.Contribute(id0, Update(0, 1, 300));
  EXPECT_THAT(resend, StatusIs(absl::StatusCode::kResourceExhausted,
                               "max_message_bytes"));
  EXPECT_EQ(aggregator::RoundErrorReasonOf(resend),
            v1::ROUND_ERROR_REASON_MERGED_TOO_LARGE);
  EXPECT_EQ(rank0->messages()[1]->round_error().reason(),
            v1::ROUND_ERROR_REASON_MERGED_TOO_LARGE)
      << "a machine-readable reason beside the code: no retry can help";
  // Everything counted is returned once the job ends.
  registry_.Leave(id0, rank0.get());
  registry_.Leave(id1, rank1.get());
  EXPECT_EQ(registry_.JobCount(), 0);
  EXPECT_EQ(registry_.BytesHeld(), 0);
}

// --- Memory the quota must see ---

class QuotaRegistryTest : public JobRegistryTest {
 protected:
  static RegistryOptions WithQuota(int64_t quota, int max_rounds = 65536) {
    RegistryOptions options;
    options.memory_quota_bytes = quota;
    options.max_rounds_per_job = max_rounds;
    return options;
  }
  explicit QuotaRegistryTest(RegistryOptions options = WithQuota(1 << 20))
      : JobRegistryTest(std::move(options)) {}
};

// A round allocates a slot per rank at its first contribution, even of an
// empty payload: with a large world, empty contributions to many layers
// must run into the quota instead of allocating without bound.
TEST_F(QuotaRegistryTest, EmptyContributionsPayForTheirRoundSlots) {
  JoinSpec spec = Spec("slots", 0, 2048);
  spec.layers.clear();
  for (int l = 0; l < 64; ++l) spec.layers.push_back({"w" + std::to_string(l), kNumel});
  std::shared_ptr<RecordingSink> sink;
  const MemberId id = Join(spec, &sink);
  const int64_t held_after_join = registry_.BytesHeld();
  const EncodedPayload empty = EncodeOrDie(RandomSparse(kNumel, 0, 1u));
  ENTROGRAD_ASSERT_OK(registry_.Contribute(id, MakeUpdate(0, 0, empty)));
  EXPECT_GE(registry_.BytesHeld() - held_after_join,
            aggregator::RoundOverheadBytes(2048))
      << "an empty payload still costs its round's slots";
  absl::Status refused;
  int accepted = 1;
  for (uint32_t l = 1; l < 64 && refused.ok(); ++l) {
    refused = registry_.Contribute(id, MakeUpdate(0, l, empty));
    accepted += refused.ok();
  }
  EXPECT_THAT(refused,
              StatusIs(absl::StatusCode::kResourceExhausted, "memory quota"));
  EXPECT_EQ(aggregator::RoundErrorReasonOf(refused),
            v1::ROUND_ERROR_REASON_SHARD_LIMIT);
  EXPECT_EQ(registry_.RoundsInFlight(), accepted);
  EXPECT_LE(registry_.BytesHeld(), int64_t{1} << 20);
}

// The contribution that completes a round also pays for its merge, before
// the merge allocates: here the contributions fit but their merge does not.
TEST_F(QuotaRegistryTest, TheMergeIsCountedBeforeItRuns) {
  std::shared_ptr<RecordingSink> rank0, rank1;
  const MemberId id0 = Join(Spec("merge", 0, 2), &rank0);
  const MemberId id1 = Join(Spec("merge", 1, 2), &rank1);
  // Two disjoint-ish 20000-entry contributions: 160 KB each decoded, while
  // their merge needs about 3 x 8 bytes x 40000 entries.
  ENTROGRAD_ASSERT_OK(registry_.Contribute(id0, Update(0, 1, 20000)));
  ASSERT_LT(aggregator::MergeBytesBound(kNumel, 20000) + 2 * 160000,
            int64_t{1} << 20);
  ASSERT_GT(aggregator::MergeBytesBound(kNumel, 40000) + 2 * 160000,
            int64_t{1} << 20);
  const int64_t held = registry_.BytesHeld();
  absl::Status refused = registry_.Contribute(id1, Update(0, 2, 20000));
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kResourceExhausted,
                                "the merge it completes"));
  EXPECT_EQ(registry_.BytesHeld(), held) << "a refusal changes nothing";
  EXPECT_EQ(registry_.RoundsInFlight(), 1);
  // A smaller last contribution fits, merge included.
  ENTROGRAD_ASSERT_OK(registry_.Contribute(id1, Update(0, 2, 100)));
  EXPECT_EQ(registry_.RoundsInFlight(), 0);
  ASSERT_EQ(rank1->messages().size(), 2u);
  EXPECT_TRUE(rank1->messages()[1]->has_merged_layer());
}

// A job's layer table is held as long as the job: a Join that would
// create a job whose table does not fit is refused and creates nothing.
TEST_F(QuotaRegistryTest, ALayerTableBeyondTheQuotaIsRefused) {
  JoinSpec spec = Spec("tables", 0, 1);
  spec.layers.clear();
  for (int l = 0; l < 8000; ++l) {
    spec.layers.push_back({std::string(200, 'a' + l % 26) + std::to_string(l), 1});
  }
  ASSERT_GT(aggregator::JobTableBytes(MakeJoin(spec)), int64_t{1} << 20);
  auto sink = std::make_shared<RecordingSink>();
  EXPECT_THAT(registry_.Join(MakeJoin(spec), std::nullopt, sink),
              StatusIs(absl::StatusCode::kResourceExhausted, "layer table"));
  EXPECT_EQ(registry_.JobCount(), 0);
  EXPECT_EQ(registry_.BytesHeld(), 0);
  EXPECT_TRUE(sink->messages().empty());
}

class RoundLimitRegistryTest : public QuotaRegistryTest {
 protected:
  RoundLimitRegistryTest()
      : QuotaRegistryTest(WithQuota(int64_t{1} << 30, /*max_rounds=*/2)) {}
  JoinSpec ThreeLayers(uint32_t rank) {
    JoinSpec spec = Spec("limit", rank, 2);
    spec.layers = {{"a", kNumel}, {"b", kNumel}, {"c", kNumel}};
    return spec;
  }
};

TEST_F(RoundLimitRegistryTest, RoundsInFlightPerJobAreBounded) {
  std::shared_ptr<RecordingSink> sink;
  const MemberId id = Join(ThreeLayers(0), &sink);
  const EncodedPayload payload = EncodeOrDie(RandomSparse(kNumel, 10, 1u));
  ENTROGRAD_ASSERT_OK(registry_.Contribute(id, MakeUpdate(0, 0, payload)));
  ENTROGRAD_ASSERT_OK(registry_.Contribute(id, MakeUpdate(0, 1, payload)));
  absl::Status refused = registry_.Contribute(id, MakeUpdate(0, 2, payload));
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kResourceExhausted,
                                "--max_rounds_per_job"));
  EXPECT_EQ(aggregator::RoundErrorReasonOf(refused),
            v1::ROUND_ERROR_REASON_SHARD_LIMIT);
  EXPECT_EQ(registry_.RoundsInFlight(), 2);
}

// Rank 1 never joins, so no step is ever applied by every rank and the
// aborted records are never released by progress: their number is bounded,
// the oldest forgotten first (a resend of it starts the round again).
TEST_F(RoundLimitRegistryTest, AbortedRecordsAreBoundedWhenARankNeverJoins) {
  std::shared_ptr<RecordingSink> sink;
  const MemberId id = Join(ThreeLayers(0), &sink);
  const EncodedPayload payload = EncodeOrDie(RandomSparse(kNumel, 10, 1u));
  for (uint32_t layer = 0; layer < 3; ++layer) {
    ENTROGRAD_ASSERT_OK(registry_.Contribute(id, MakeUpdate(0, layer, payload)));
    ASSERT_EQ(registry_.AbortExpiredRounds(absl::InfiniteFuture()), 1);
  }
  EXPECT_THAT(registry_.Contribute(id, MakeUpdate(0, 2, payload)),
              StatusIs(absl::StatusCode::kAborted, "round timeout"));
  EXPECT_THAT(registry_.Contribute(id, MakeUpdate(0, 1, payload)),
              StatusIs(absl::StatusCode::kAborted, "round timeout"));
  // The oldest record (layer 0) was forgotten.
  ENTROGRAD_EXPECT_OK(registry_.Contribute(id, MakeUpdate(0, 0, payload)));
  EXPECT_EQ(registry_.RoundsInFlight(), 1);
  const auto messages = sink->messages();
  ASSERT_GE(messages.size(), 2u);
  EXPECT_EQ(messages[1]->round_error().reason(),
            v1::ROUND_ERROR_REASON_ROUND_TIMEOUT);
}

// The last stream of a job leaves with a round in flight: nobody can
// complete it or hear of its abort, so the job and its memory go at once
// (not at the round timeout, and not never).
TEST_F(QuotaRegistryTest, TheLastStreamLeavingEndsTheJobAndItsRounds) {
  std::shared_ptr<RecordingSink> rank0, rank1;
  const MemberId id0 = Join(Spec("gone", 0, 2), &rank0);
  const MemberId id1 = Join(Spec("gone", 1, 2), &rank1);
  ENTROGRAD_ASSERT_OK(registry_.Contribute(id0, Update(0, 1)));
  registry_.Leave(id0, rank0.get());
  EXPECT_EQ(registry_.JobCount(), 1) << "rank 1 is still connected";
  registry_.Leave(id1, rank1.get());
  EXPECT_EQ(registry_.JobCount(), 0);
  EXPECT_EQ(registry_.RoundsInFlight(), 0);
  EXPECT_EQ(registry_.BytesHeld(), 0);
}

// --- Untrusted layer names ---

TEST_F(JobRegistryTest, LayerNamesAreBoundedAndPrintable) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "empty"},
      {std::string(aggregator::kMaxLayerNameBytes + 1, 'x'), "too long"},
      {"conv1\nINFO forged log line", "control character"},
      {"w\xff", "not ASCII"},
  };
  for (const auto& [name, why] : bad) {
    JoinSpec spec = Spec("names", 0, 1);
    spec.layers = {{"ok", 10}, {name, 10}};
    auto sink = std::make_shared<RecordingSink>();
    absl::StatusOr<MemberId> id =
        registry_.Join(MakeJoin(spec), std::nullopt, sink);
    EXPECT_THAT(id, StatusIs(absl::StatusCode::kInvalidArgument,
                             "join.layers[1].name"))
        << why;
    EXPECT_THAT(id.status().message(), HasSubstr("printable ASCII")) << why;
    EXPECT_THAT(std::string(id.status().message()),
                ::testing::Not(HasSubstr("\n"))) << why;
  }
  EXPECT_EQ(registry_.JobCount(), 0);
  JoinSpec longest = Spec("names", 0, 1);
  longest.layers = {{std::string(aggregator::kMaxLayerNameBytes, 'x'), 10}};
  std::shared_ptr<RecordingSink> sink;
  Join(longest, &sink);
}

// Every refused update answers with a RoundError naming the round: the
// layer name in it is cut, so a long name is not echoed back in full.
TEST_F(JobRegistryTest, ErrorsDoNotEchoLayerNamesInFull) {
  const std::string name = "layer" + std::string(240, 'n');
  JoinSpec spec = Spec("echo", 0, 1);
  spec.layers = {{name, kNumel}};
  std::shared_ptr<RecordingSink> sink;
  const MemberId id = Join(spec, &sink);
  v1::LayerUpdate update = Update(0, 1);
  update.mutable_payload()->set_count(update.payload().count() + 1);
  absl::Status refused = registry_.Contribute(id, update);
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument, "layer"));
  EXPECT_THAT(std::string(refused.message()),
              ::testing::Not(HasSubstr(name)));
  EXPECT_THAT(refused.message(), HasSubstr("bytes)"));
}

// --- Rank takeover ---

// A token holder joining with a huge incarnation would replace the rank
// and lock out every restart of the real process (whose incarnation is its
// start time in microseconds). Incarnations are bounded by the shard's
// clock plus max_incarnation_lead.
TEST_F(JobRegistryTest, AnIncarnationFarAheadOfTheClockIsRefused) {
  std::shared_ptr<RecordingSink> real;
  const uint64_t now_us =
      static_cast<uint64_t>(absl::ToUnixMicros(absl::Now()));
  Join(Spec("takeover", 0, 2, now_us), &real);
  for (const uint64_t incarnation :
       {UINT64_MAX, now_us + uint64_t{3600} * 1000000 * 2}) {
    auto hostile = std::make_shared<RecordingSink>();
    EXPECT_THAT(registry_.Join(MakeJoin(Spec("takeover", 0, 2, incarnation)),
                               std::nullopt, hostile),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         "--max_incarnation_lead"))
        << incarnation;
  }
  EXPECT_TRUE(real->closes().empty()) << "the real rank was not replaced";
  // A genuine restart (a later start time) still replaces the stream.
  std::shared_ptr<RecordingSink> restarted;
  Join(Spec("takeover", 0, 2, now_us + 1000), &restarted);
  EXPECT_EQ(real->closes().size(), 1u);
}

}  // namespace
}  // namespace entrograd::testing
