// Every kind of bad input gets its exact status, changes no state, and
// leaves the other ranks' round unaffected: after each refusal the same
// round completes with the right merged update.
#include <functional>
#include <random>

#include "absl/strings/str_split.h"
#include "entrograd/wire/grpc_status.h"
#include "entrograd/wire/payload_proto.h"
#include "service_fixture.h"
#include "support/status_matchers.h"

namespace entrograd::testing {
namespace {

constexpr uint64_t kNumel = 4000;

JoinSpec Spec(uint32_t rank, const std::string& job) {
  JoinSpec spec;
  spec.job_id = job;
  spec.rank = rank;
  spec.world_size = 2;
  spec.layers = {{"w", kNumel}};
  return spec;
}

v1::LayerUpdate GoodUpdate(int64_t step, const SparseVector& update,
                           int64_t applied = -1) {
  return MakeUpdate(step, 0, EncodeOrDie(update), applied);
}

// A hand-built raw-u32 payload (indices as given, f32 values).
v1::LayerUpdate RawUpdate(int64_t step, uint64_t numel, uint64_t count,
                          const std::vector<uint32_t>& indices,
                          const std::vector<float>& values) {
  v1::LayerUpdate update;
  update.set_step(step);
  update.set_layer_index(0);
  update.set_applied_step(-1);
  v1::SparsePayload* payload = update.mutable_payload();
  payload->set_numel(numel);
  payload->set_count(count);
  payload->set_index_encoding(v1::INDEX_ENCODING_RAW_U32);
  payload->set_value_type(v1::VALUE_TYPE_F32);
  payload->set_index_bytes(std::string(reinterpret_cast<const char*>(indices.data()),
                                       indices.size() * 4));
  payload->set_value_bytes(std::string(reinterpret_cast<const char*>(values.data()),
                                       values.size() * 4));
  return update;
}

struct UpdateCase {
  std::string name;
  std::function<v1::LayerUpdate()> make;
  absl::StatusCode code;
  std::string message;
};

class BadUpdateTest : public AggregatorServiceTest,
                      public ::testing::WithParamInterface<UpdateCase> {};

TEST_P(BadUpdateTest, RefusedForTheSenderOnlyAndNothingChanges) {
  const UpdateCase& bad = GetParam();
  aggregator::AggregatorConfig config = TestConfig();
  config.max_message_bytes = 1 << 16;
  StartServer(config);
  const std::string job = "bad-" + bad.name;
  auto rank0 = Joined(Spec(0, job));
  auto rank1 = Joined(Spec(1, job));
  std::mt19937 rng(3);
  const SparseVector update0 = RandomSparse(kNumel, 40, rng);
  const SparseVector update1 = RandomSparse(kNumel, 40, rng);

  // Complete step 0 so that "behind" and "ahead" have a reference point.
  rank0->SendUpdate(GoodUpdate(0, update0));
  rank1->SendUpdate(GoodUpdate(0, update1));
  ASSERT_TRUE(rank0->Read().ok());
  ASSERT_TRUE(rank1->Read().ok());

  ASSERT_TRUE(rank1->SendUpdate(bad.make()));
  auto answer = rank1->Read();
  ASSERT_TRUE(answer.ok()) << answer.status();
  ASSERT_TRUE(answer->has_round_error()) << answer->ShortDebugString();
  EXPECT_EQ(answer->round_error().code(), static_cast<int>(bad.code))
      << answer->round_error().message();
  EXPECT_THAT(answer->round_error().message(), ::testing::HasSubstr(bad.message));
  EXPECT_EQ(server_->registry().RoundsInFlight(), 0) << "the refusal changed state";

  // The same ranks finish step 1 as if nothing happened.
  rank0->SendUpdate(GoodUpdate(1, update0, 0));
  rank1->SendUpdate(GoodUpdate(1, update1, 0));
  for (auto* worker : {rank0.get(), rank1.get()}) {
    auto merged = worker->Read();
    ASSERT_TRUE(merged.ok()) << merged.status();
    ASSERT_TRUE(merged->has_merged_layer()) << merged->ShortDebugString();
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(DecodedPayload decoded,
                                   DecodeMerged(merged->merged_layer()));
    EXPECT_EQ(ToDense(decoded), ReferenceMergeDense({update0, update1}));
  }
}

const std::vector<float> kThree = {0.5f, -1.0f, 2.0f};

INSTANTIATE_TEST_SUITE_P(
    Table, BadUpdateTest,
    ::testing::Values(
        UpdateCase{"index_out_of_range",
                   [] { return RawUpdate(1, kNumel, 3, {1, 2, 4000}, kThree); },
                   absl::StatusCode::kInvalidArgument, "4000"},
        UpdateCase{"not_ascending",
                   [] { return RawUpdate(1, kNumel, 3, {5, 3, 9}, kThree); },
                   absl::StatusCode::kInvalidArgument, "not greater"},
        UpdateCase{"repeated_index",
                   [] { return RawUpdate(1, kNumel, 3, {5, 5, 9}, kThree); },
                   absl::StatusCode::kInvalidArgument, "repeated"},
        // The value bytes are sized first (they bound count by what arrived).
        UpdateCase{"count_mismatch",
                   [] { return RawUpdate(1, kNumel, 4, {1, 2, 3}, kThree); },
                   absl::StatusCode::kInvalidArgument,
                   "value_bytes: truncated: 12 bytes, 4 f32 values need 16"},
        UpdateCase{"numel_mismatch",
                   [] { return RawUpdate(1, kNumel + 1, 3, {1, 2, 3}, kThree); },
                   absl::StatusCode::kFailedPrecondition, "does not match layer 0"},
        UpdateCase{"unknown_layer",
                   [] {
                     auto update = RawUpdate(1, kNumel, 3, {1, 2, 3}, kThree);
                     update.set_layer_index(7);
                     return update;
                   },
                   absl::StatusCode::kInvalidArgument, "layer_index 7 is unknown"},
        UpdateCase{"step_too_far_ahead",
                   [] { return RawUpdate(50, kNumel, 3, {1, 2, 3}, kThree); },
                   absl::StatusCode::kOutOfRange, "too far ahead"},
        UpdateCase{"negative_step",
                   [] { return RawUpdate(-3, kNumel, 3, {1, 2, 3}, kThree); },
                   absl::StatusCode::kInvalidArgument, "negative"},
        UpdateCase{"step_beyond_the_largest",
                   [] {
                     auto update = RawUpdate(INT64_MAX, kNumel, 3, {1, 2, 3}, kThree);
                     update.set_applied_step(INT64_MAX - 1);
                     return update;
                   },
                   absl::StatusCode::kInvalidArgument, "above the largest step"},
        UpdateCase{"applied_step_below_minus_one",
                   [] {
                     auto update = RawUpdate(1, kNumel, 3, {1, 2, 3}, kThree);
                     update.set_applied_step(-2);
                     return update;
                   },
                   absl::StatusCode::kInvalidArgument, "applied_step -2 is below -1"},
        UpdateCase{"applied_step_of_the_same_step",
                   [] {
                     auto update = RawUpdate(1, kNumel, 3, {1, 2, 3}, kThree);
                     update.set_applied_step(1);
                     return update;
                   },
                   absl::StatusCode::kInvalidArgument,
                   "applied_step 1 is not below layer_update.step 1"},
        UpdateCase{"applied_step_huge",
                   [] {
                     auto update = RawUpdate(1, kNumel, 3, {1, 2, 3}, kThree);
                     update.set_applied_step(INT64_MAX);
                     return update;
                   },
                   absl::StatusCode::kInvalidArgument,
                   "applied_step 9223372036854775807"},
        UpdateCase{"merged_keep_factor_below_one",
                   [] {
                     auto update = RawUpdate(1, kNumel, 3, {1, 2, 3}, kThree);
                     update.set_merged_keep_factor(0.5);
                     return update;
                   },
                   absl::StatusCode::kInvalidArgument,
                   "merged_keep_factor 0.5 is neither 0"},
        UpdateCase{"truncated_payload",
                   [] {
                     auto update = RawUpdate(1, kNumel, 3, {1, 2, 3}, kThree);
                     update.mutable_payload()->mutable_value_bytes()->resize(7);
                     return update;
                   },
                   absl::StatusCode::kInvalidArgument, "value_bytes"},
        UpdateCase{"unknown_index_encoding",
                   [] {
                     auto update = RawUpdate(1, kNumel, 3, {1, 2, 3}, kThree);
                     update.mutable_payload()->set_index_encoding(
                         static_cast<v1::IndexEncoding>(9));
                     return update;
                   },
                   absl::StatusCode::kInvalidArgument, "9"},
        UpdateCase{"unknown_value_type",
                   [] {
                     auto update = RawUpdate(1, kNumel, 3, {1, 2, 3}, kThree);
                     update.mutable_payload()->set_value_type(v1::VALUE_TYPE_UNSPECIFIED);
                     return update;
                   },
                   absl::StatusCode::kInvalidArgument, "value_type"}),
    [](const ::testing::TestParamInfo<UpdateCase>& info) { return info.param.name; });

// "Step behind what was merged" needs every rank to have applied the step;
// in the table test step 0 is still held (a resend there is a duplicate,
// answered with the merged update again), so it has its own test.
TEST_F(AggregatorServiceTest, StepBehindWhatEveryRankAppliedIsRefused) {
  StartServer();
  auto rank0 = Joined(Spec(0, "behind"));
  auto rank1 = Joined(Spec(1, "behind"));
  std::mt19937 rng(4);
  const SparseVector update = RandomSparse(kNumel, 10, rng);
  for (int64_t step : {0, 1}) {
    rank0->SendUpdate(GoodUpdate(step, update, step - 1));
    rank1->SendUpdate(GoodUpdate(step, update, step - 1));
    ASSERT_TRUE(rank0->Read().ok());
    ASSERT_TRUE(rank1->Read().ok());
  }
  // Both reported applied step 0 with their step-1 updates; a resend of
  // step 0 (carrying no newer applied step) finds it released.
  rank1->SendUpdate(GoodUpdate(0, update));
  auto answer = rank1->Read();
  ASSERT_TRUE(answer.ok() && answer->has_round_error()) << answer.status();
  EXPECT_EQ(answer->round_error().code(),
            static_cast<int>(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(answer->round_error().message(), ::testing::HasSubstr("already merged"));
}

struct JoinCase {
  std::string name;
  std::function<v1::Join()> make;
  absl::StatusCode code;
  std::string message;
};

class BadJoinTest : public AggregatorServiceTest,
                    public ::testing::WithParamInterface<JoinCase> {};

TEST_P(BadJoinTest, EndsTheStreamWithAPreciseStatus) {
  StartServer();
  auto rank0 = Joined(Spec(0, "join-job"));  // the job exists
  TestWorker worker(Channel());
  EXPECT_THAT(worker.Join(GetParam().make()),
              StatusIs(GetParam().code, GetParam().message));
  EXPECT_EQ(server_->registry().JobCount(), 1);
}

v1::Join JoinWith(const std::function<void(JoinSpec&)>& edit) {
  JoinSpec spec = Spec(1, "join-job");
  edit(spec);
  return MakeJoin(spec);
}

INSTANTIATE_TEST_SUITE_P(
    Table, BadJoinTest,
    ::testing::Values(
        JoinCase{"world_size_zero", [] { return JoinWith([](JoinSpec& s) { s.world_size = 0; s.job_id = "other"; }); },
                 absl::StatusCode::kInvalidArgument, "world_size = 0"},
        JoinCase{"world_size_huge", [] { return JoinWith([](JoinSpec& s) { s.world_size = 1u << 30; s.job_id = "other"; }); },
                 absl::StatusCode::kInvalidArgument, "world_size = 1073741824"},
        JoinCase{"rank_not_below_world", [] { return JoinWith([](JoinSpec& s) { s.rank = 2; }); },
                 absl::StatusCode::kInvalidArgument, "rank = 2"},
        JoinCase{"bad_job_id", [] { return JoinWith([](JoinSpec& s) { s.job_id = "a b"; }); },
                 absl::StatusCode::kInvalidArgument, "job_id"},
        JoinCase{"no_layers", [] { return JoinWith([](JoinSpec& s) { s.layers.clear(); }); },
                 absl::StatusCode::kInvalidArgument, "layers"},
        JoinCase{"zero_numel_layer", [] { return JoinWith([](JoinSpec& s) { s.layers = {{"w", 0}}; }); },
                 absl::StatusCode::kInvalidArgument, "numel 0"},
        JoinCase{"applied_step_below_minus_one", [] { return JoinWith([](JoinSpec& s) { s.applied_step = -2; }); },
                 absl::StatusCode::kInvalidArgument, "join.applied_step = -2"},
        JoinCase{"applied_step_huge", [] { return JoinWith([](JoinSpec& s) { s.applied_step = INT64_MAX; }); },
                 absl::StatusCode::kInvalidArgument, "join.applied_step = 9223372036854775807"},
        JoinCase{"world_size_differs", [] { return JoinWith([](JoinSpec& s) { s.world_size = 3; }); },
                 absl::StatusCode::kFailedPrecondition, "world_size 3 vs 2"},
        JoinCase{"layer_table_differs", [] { return JoinWith([](JoinSpec& s) { s.layers = {{"w", kNumel + 1}}; }); },
                 absl::StatusCode::kFailedPrecondition, "layer 0"},
        JoinCase{"params_hash_differs", [] { return JoinWith([](JoinSpec& s) { s.params_hash = 7; }); },
                 absl::StatusCode::kFailedPrecondition, "initial parameter hash"},
        JoinCase{"same_rank_same_incarnation", [] { return JoinWith([](JoinSpec& s) { s.rank = 0; }); },
                 absl::StatusCode::kAlreadyExists, "already has a live stream"},
        JoinCase{"older_incarnation", [] { return JoinWith([](JoinSpec& s) { s.rank = 0; s.incarnation = 0; }); },
                 absl::StatusCode::kFailedPrecondition, "older than the live incarnation"}),
    [](const ::testing::TestParamInfo<JoinCase>& info) { return info.param.name; });

// A refused Join is logged; its job id is the worker's, unvalidated: the log
// line must stay short and free of control characters (no forged lines).
TEST_F(AggregatorServiceTest, RefusedJoinLogsAHostileJobIdBoundedAndEscaped) {
  StartServer();
  std::string hostile;
  for (int i = 0; i < 10240; ++i) {
    hostile.push_back(i % 64 == 5 ? '\n' : static_cast<char>(1 + i % 31));
  }
  ::testing::internal::CaptureStderr();
  TestWorker worker(Channel());
  const absl::Status refused =
      worker.Join(JoinWith([&](JoinSpec& s) { s.job_id = hostile; })).status();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument, "job_id"));
  EXPECT_THAT(log, ::testing::HasSubstr("refused"));
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    EXPECT_LE(line.size(), 1000u) << line.substr(0, 200);
    for (const char c : line) {
      ASSERT_TRUE(c >= 0x20 && c < 0x7f)
          << "control byte " << static_cast<int>(c) << " in: "
          << line.substr(0, 200);
    }
  }
  EXPECT_LE(refused.message().size(), 1000u);
}

TEST_F(AggregatorServiceTest, UpdateBeforeJoinEndsTheStream) {
  StartServer();
  TestWorker worker(Channel());
  std::mt19937 rng(1);
  worker.SendUpdate(GoodUpdate(0, RandomSparse(kNumel, 5, rng)));
  EXPECT_THAT(worker.Read(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                      "before Join"));
  EXPECT_EQ(server_->registry().JobCount(), 0);
}

TEST_F(AggregatorServiceTest, OversizeMessageIsResourceExhausted) {
  aggregator::AggregatorConfig config = TestConfig();
  config.max_message_bytes = 1 << 16;
  StartServer(config);
  auto rank0 = Joined(Spec(0, "big"));
  std::mt19937 rng(1);
  JoinSpec spec = Spec(0, "big");
  // 4000 dense floats are 16 KB: within the limit. 100K indices are not.
  v1::LayerUpdate update = RawUpdate(0, kNumel, 3, {1, 2, 3}, kThree);
  update.mutable_payload()->mutable_index_bytes()->resize(100000);
  rank0->SendUpdate(update);
  EXPECT_THAT(rank0->Read(), StatusIs(absl::StatusCode::kResourceExhausted, ""));
  EXPECT_EQ(server_->registry().RoundsInFlight(), 0);
}

TEST_F(AggregatorServiceTest, NewerIncarnationReplacesTheStream) {
  StartServer();
  auto old_stream = Joined(Spec(0, "reincarnate"));
  JoinSpec newer = Spec(0, "reincarnate");
  newer.incarnation = 2;
  auto new_stream = Joined(newer);
  const absl::StatusOr<v1::AggregatorMessage> end = old_stream->Read();
  EXPECT_THAT(end, StatusIs(absl::StatusCode::kAborted, "replaced by incarnation 2"));
  // Machine-readable, in the trailing metadata: what the client decides on.
  EXPECT_EQ(StreamEndReasonOf(end.status()), v1::STREAM_END_REASON_RANK_REPLACED);
  // Other ends carry no reason.
  EXPECT_EQ(StreamEndReasonOf(new_stream->Finish()), v1::STREAM_END_REASON_UNSPECIFIED);
}

}  // namespace
}  // namespace entrograd::testing
