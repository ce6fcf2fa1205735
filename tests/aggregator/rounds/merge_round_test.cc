// MergeRound alone: no registry, no lock. The merged update equals the
// plain reference merge bit for bit, whatever thread runs it, and a round
// that cannot be sent or summed fails with the documented status.
#include "aggregator/rounds/merge_round.h"

#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <utility>
#include <string>
#include <thread>
#include <vector>

#include "aggregator/rounds/round_error.h"
#include "aggregator/support/random_updates.h"
#include "aggregator/support/reference_merge.h"
#include "aggregator/support/sparse_vector.h"
#include "aggregator/support/test_worker.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::testing {
namespace {

using aggregator::MergeRound;

constexpr uint64_t kNumel = 20000;
constexpr uint64_t kNoLimit = uint64_t{1} << 40;

// What the registry holds for a rank: its payload as the wire carries it,
// decoded.
std::optional<DecodedPayload> Decoded(const EncodedPayload& encoded) {
  absl::StatusOr<DecodedPayload> decoded = DecodePayload(ViewOf(encoded));
  EXPECT_TRUE(decoded.ok()) << decoded.status();
  return decoded.ok() ? std::optional<DecodedPayload>(*std::move(decoded))
                      : std::nullopt;
}

// Three sparse ranks and one that sends its whole layer dense.
struct Round {
  std::vector<SparseVector> ranks;
  std::vector<std::optional<DecodedPayload>> by_rank;
};

Round MixedRound() {
  Round round;
  std::mt19937 rng(31);
  for (int rank = 0; rank < 3; ++rank) {
    round.ranks.push_back(RandomSparse(kNumel, 400, rng));
    round.by_rank.push_back(Decoded(EncodeOrDie(round.ranks.back())));
  }
  SparseVector dense = RandomSparse(kNumel, kNumel, rng);
  std::vector<float> values(kNumel, 0.0f);
  for (size_t j = 0; j < dense.indices.size(); ++j) {
    values[dense.indices[j]] = dense.values[j];
  }
  absl::StatusOr<EncodedPayload> encoded =
      EncodeDense(values, {ValueType::kF32, IndexEncoding::kDense});
  EXPECT_TRUE(encoded.ok()) << encoded.status();
  round.ranks.push_back(dense);
  round.by_rank.push_back(Decoded(*encoded));
  EXPECT_TRUE(round.by_rank.back()->dense);
  return round;
}

TEST(MergeRoundTest, EqualsTheReferenceMergeBitwise) {
  const Round round = MixedRound();
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const v1::AggregatorMessage> message,
      MergeRound(7, 3, round.by_rank, kNoLimit));
  ASSERT_TRUE(message->has_merged_layer());
  const v1::MergedLayer& merged = message->merged_layer();
  EXPECT_EQ(merged.step(), 7);
  EXPECT_EQ(merged.layer_index(), 3u);
  EXPECT_EQ(merged.contributors(), 4u);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(DecodedPayload decoded, DecodeMerged(merged));
  const std::vector<float> got = ToDense(decoded);
  const std::vector<float> want = ReferenceMergeDense(round.ranks);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(0,
            std::memcmp(got.data(), want.data(), want.size() * sizeof(float)));
}

// The merge pool runs rounds on whichever thread is free, each with its own
// merge scratch (reused across rounds of other sizes): the bytes must not
// depend on it.
TEST(MergeRoundTest, TheBytesDoNotDependOnTheThread) {
  const Round round = MixedRound();
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const v1::AggregatorMessage> here,
      MergeRound(1, 0, round.by_rank, kNoLimit));
  const std::string expected = here->SerializeAsString();
  std::vector<std::string> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&round, &got, t] {
      // A different round first, so each thread's scratch holds leftovers.
      std::mt19937 rng(100 + t);
      std::vector<std::optional<DecodedPayload>> other;
      for (int rank = 0; rank < 2; ++rank) {
        other.push_back(Decoded(EncodeOrDie(RandomSparse(kNumel, 900, rng))));
      }
      (void)MergeRound(0, 0, other, kNoLimit);
      auto message = MergeRound(1, 0, round.by_rank, kNoLimit);
      if (message.ok()) got[t] = (*message)->SerializeAsString();
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(got[t], expected) << "thread " << t;
}

// Rank order, not the order in which contributions arrived, decides the
// sum: swapping two ranks' contributions can change the float sum's bits,
// so the result is tied to by_rank's order. Checked against the reference
// for both orders.
TEST(MergeRoundTest, SumsInRankOrder) {
  // Values whose float sum depends on the order of addition.
  SparseVector a{kNumel, {5}, {1e8f}};
  SparseVector b{kNumel, {5}, {1.0f}};
  SparseVector c{kNumel, {5}, {-1e8f}};
  std::vector<std::string> payloads;
  for (const std::vector<SparseVector>& ranks :
       {std::vector<SparseVector>{a, b, c},
        std::vector<SparseVector>{a, c, b}}) {
    std::vector<std::optional<DecodedPayload>> by_rank;
    for (const SparseVector& rank : ranks)
      by_rank.push_back(Decoded(EncodeOrDie(rank)));
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        std::shared_ptr<const v1::AggregatorMessage> message,
        MergeRound(0, 0, by_rank, kNoLimit));
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(DecodedPayload decoded,
                                   DecodeMerged(message->merged_layer()));
    const std::vector<float> got = ToDense(decoded);
    const std::vector<float> want = ReferenceMergeDense(ranks);
    EXPECT_EQ(
        0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)));
    payloads.push_back(message->merged_layer().payload().SerializeAsString());
  }
  EXPECT_NE(payloads[0], payloads[1]) << "the data do not show the order";
}

TEST(MergeRoundTest, AMessageLargerThanTheLimitIsMergedTooLarge) {
  const Round round = MixedRound();
  absl::StatusOr<std::shared_ptr<const v1::AggregatorMessage>> message =
      MergeRound(0, 0, round.by_rank, /*max_message_bytes=*/1000);
  EXPECT_THAT(message, StatusIs(absl::StatusCode::kResourceExhausted,
                                "max_message_bytes = 1000"));
  EXPECT_EQ(aggregator::RoundErrorReasonOf(message.status()),
            v1::ROUND_ERROR_REASON_MERGED_TOO_LARGE);
}

// Each rank's value is finite; their sum is not. The round fails instead of
// sending Inf to every rank.
TEST(MergeRoundTest, ASumThatOverflowsIsAborted) {
  const float big = std::numeric_limits<float>::max();
  SparseVector rank{kNumel, {11}, {big}};
  std::vector<std::optional<DecodedPayload>> by_rank = {
      Decoded(EncodeOrDie(rank)), Decoded(EncodeOrDie(rank))};
  EXPECT_THAT(MergeRound(0, 0, by_rank, kNoLimit),
              StatusIs(absl::StatusCode::kAborted, ""));
}

std::optional<DecodedPayload> DecodedAs(const SparseVector& vector,
                                        ValueType type) {
  absl::StatusOr<EncodedPayload> encoded = EncodeSparse(
      vector.numel, vector.indices, vector.values, {type, std::nullopt});
  EXPECT_TRUE(encoded.ok()) << encoded.status();
  return encoded.ok() ? Decoded(*encoded) : std::nullopt;
}

constexpr ValueType kEveryType[] = {ValueType::kF32, ValueType::kF16,
                                    ValueType::kBF16};

// Ranks that sent f16 (or bf16) get the merge in that type: the float32
// reference merge of what they sent, rounded once, in fewer bytes.
TEST(MergeRoundTest, ANarrowRoundIsAnsweredInItsType) {
  for (const ValueType type : {ValueType::kF16, ValueType::kBF16}) {
    std::mt19937 rng(5);
    std::vector<std::optional<DecodedPayload>> by_rank;
    std::vector<SparseVector> as_sent;
    for (int rank = 0; rank < 4; ++rank) {
      by_rank.push_back(DecodedAs(RandomSparse(kNumel, 400, rng), type));
      as_sent.push_back({kNumel, by_rank.back()->indices,
                         by_rank.back()->values});
    }
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        std::shared_ptr<const v1::AggregatorMessage> narrow,
        MergeRound(0, 0, by_rank, kNoLimit, kEveryType));
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        std::shared_ptr<const v1::AggregatorMessage> wide,
        MergeRound(0, 0, by_rank, kNoLimit, {ValueType::kF32}));
    const auto& payload = narrow->merged_layer().payload();
    EXPECT_EQ(payload.value_type(), static_cast<int>(type));
    EXPECT_EQ(wide->merged_layer().payload().value_type(), v1::VALUE_TYPE_F32);
    EXPECT_EQ(payload.value_bytes().size() * 2,
              wide->merged_layer().payload().value_bytes().size());

    const std::vector<float> want_dense = ReferenceMergeDense(as_sent);
    SparseVector want{kNumel, {}, {}};
    for (uint32_t i = 0; i < kNumel; ++i) {
      if (want_dense[i] != 0.0f) {
        want.indices.push_back(i);
        want.values.push_back(want_dense[i]);
      }
    }
    const std::vector<float> rounded = ToDense(*DecodedAs(want, type));
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(DecodedPayload got,
                                   DecodeMerged(narrow->merged_layer()));
    const std::vector<float> got_dense = ToDense(got);
    EXPECT_EQ(0, std::memcmp(got_dense.data(), rounded.data(),
                             rounded.size() * sizeof(float)));
  }
}

// Mixed types, or a type some rank cannot read, go in float32, exactly.
TEST(MergeRoundTest, MixedOrUnacceptedTypesAreAnsweredInF32) {
  std::mt19937 rng(9);
  std::vector<std::optional<DecodedPayload>> mixed = {
      DecodedAs(RandomSparse(kNumel, 300, rng), ValueType::kF16),
      DecodedAs(RandomSparse(kNumel, 300, rng), ValueType::kBF16)};
  std::vector<std::optional<DecodedPayload>> f16 = {
      DecodedAs(RandomSparse(kNumel, 300, rng), ValueType::kF16),
      DecodedAs(RandomSparse(kNumel, 300, rng), ValueType::kF16)};
  for (const auto& [by_rank, accepted] :
       {std::pair{mixed, std::vector<ValueType>(std::begin(kEveryType),
                                                std::end(kEveryType))},
        std::pair{f16, std::vector<ValueType>{ValueType::kF32,
                                              ValueType::kBF16}}}) {
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        std::shared_ptr<const v1::AggregatorMessage> message,
        MergeRound(0, 0, by_rank, kNoLimit, accepted));
    EXPECT_EQ(message->merged_layer().payload().value_type(),
              v1::VALUE_TYPE_F32);
  }
}

// The merge is the mean: f16's largest value from every rank stays exactly
// that value in f16 (a sum would saturate).
TEST(MergeRoundTest, TheMeanOfF16sFitsInF16) {
  const SparseVector rank{kNumel, {3, 17}, {65504.0f, -0.5f}};
  std::vector<std::optional<DecodedPayload>> by_rank = {
      DecodedAs(rank, ValueType::kF16), DecodedAs(rank, ValueType::kF16)};
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const v1::AggregatorMessage> message,
      MergeRound(0, 0, by_rank, kNoLimit, kEveryType));
  EXPECT_EQ(message->merged_layer().payload().value_type(),
            v1::VALUE_TYPE_F16);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(EncodedPayload encoded_f16,
                                 EncodeSparse(kNumel, rank.indices, rank.values,
                                              {ValueType::kF16, std::nullopt}));
  EXPECT_EQ(encoded_f16.saturated_values, 0);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(DecodedPayload got,
                                 DecodeMerged(message->merged_layer()));
  EXPECT_EQ(ToDense(got)[3], 65504.0f);
  EXPECT_EQ(ToDense(got)[17], -0.5f);
}

}  // namespace
}  // namespace entrograd::testing
