// MergeRound alone: no registry, no lock. The merged update equals the
// plain reference merge bit for bit, whatever thread runs it, and a round
// that cannot be sent or summed fails with the documented status.
#include "aggregator/rounds/merge_round.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <utility>
#include <string>
#include <thread>
#include <vector>

#include "aggregator/merge/global_top_k.h"
#include "aggregator/rounds/job_state.h"
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
                                    ValueType::kBF16, ValueType::kE5M2};

// Ranks that sent f16 (or bf16, or e5m2) get the merge in that type: the
// float32 reference merge of what they sent, rounded once, in fewer bytes.
TEST(MergeRoundTest, ANarrowRoundIsAnsweredInItsType) {
  for (const ValueType type :
       {ValueType::kF16, ValueType::kBF16, ValueType::kE5M2}) {
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
    EXPECT_EQ(payload.value_bytes().size() * 4 / ValueTypeBytes(type),
              wide->merged_layer().payload().value_bytes().size());

    const std::vector<float> want_dense = ReferenceMergeDense(as_sent);
    // Over the union of the indices sent, zeros included: a value that
    // underflowed to -0 on the way up (e5m2 flushes below 2^-17) stays an
    // entry of the merge, with its sign.
    std::vector<bool> in_union(kNumel, false);
    for (const SparseVector& sent : as_sent) {
      for (uint32_t i : sent.indices) in_union[i] = true;
    }
    SparseVector want{kNumel, {}, {}};
    for (uint32_t i = 0; i < kNumel; ++i) {
      if (in_union[i]) {
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

// Global top-k, computed here the plain way: the reference merge's entries
// sorted by |value| descending then index ascending, the first `keep`
// taken, put back in index order.
SparseVector LargestOfReference(const std::vector<SparseVector>& ranks,
                                size_t keep) {
  const SparseVector merged = ReferenceMerge(ranks);
  std::vector<size_t> order(merged.indices.size());
  for (size_t j = 0; j < order.size(); ++j) order[j] = j;
  std::sort(order.begin(), order.end(), [&merged](size_t a, size_t b) {
    const float x = std::fabs(merged.values[a]);
    const float y = std::fabs(merged.values[b]);
    return x != y ? x > y : merged.indices[a] < merged.indices[b];
  });
  order.resize(std::min(keep, order.size()));
  std::sort(order.begin(), order.end());
  SparseVector kept{merged.numel, {}, {}};
  for (size_t j : order) {
    kept.indices.push_back(merged.indices[j]);
    kept.values.push_back(merged.values[j]);
  }
  return kept;
}

// With a keep factor c the round keeps the ceil(c * largest count) merged
// entries of largest magnitude, the same bits as the reference, instead of
// the union of the four ranks' entries.
TEST(MergeRoundTest, AKeepFactorKeepsTheLargestMergedEntries) {
  std::mt19937 rng(77);
  std::vector<SparseVector> ranks;
  std::vector<std::optional<DecodedPayload>> by_rank;
  for (size_t count : {400, 250, 390, 10}) {
    ranks.push_back(RandomSparse(kNumel, count, rng));
    by_rank.push_back(Decoded(EncodeOrDie(ranks.back())));
  }
  for (const auto& [factor, keep] :
       {std::pair{1.0, size_t{400}}, std::pair{2.5, size_t{1000}}}) {
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        std::shared_ptr<const v1::AggregatorMessage> message,
        MergeRound(1, 0, by_rank, kNoLimit, {}, factor));
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(DecodedPayload got,
                                   DecodeMerged(message->merged_layer()));
    const SparseVector want = LargestOfReference(ranks, keep);
    ASSERT_EQ(want.indices.size(), keep);
    EXPECT_FALSE(got.dense);
    EXPECT_EQ(got.indices, want.indices) << "factor " << factor;
    ASSERT_EQ(got.values.size(), want.values.size());
    EXPECT_EQ(0, std::memcmp(got.values.data(), want.values.data(),
                             want.values.size() * sizeof(float)));
  }
  // Factor 0, and a factor that asks for more than the union: the union.
  for (double factor : {0.0, 1e6}) {
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        std::shared_ptr<const v1::AggregatorMessage> message,
        MergeRound(1, 0, by_rank, kNoLimit, {}, factor));
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(DecodedPayload got,
                                   DecodeMerged(message->merged_layer()));
    EXPECT_EQ(got.indices, ReferenceMerge(ranks).indices);
  }
}

// Equal magnitudes are kept by the smaller index.
TEST(MergeRoundTest, AKeepFactorBreaksTiesByTheSmallerIndex) {
  const std::vector<SparseVector> ranks = {
      {kNumel, {5, 9}, {1.0f, -1.0f}}, {kNumel, {2, 7}, {1.0f, -1.0f}}};
  std::vector<std::optional<DecodedPayload>> by_rank;
  for (const SparseVector& rank : ranks) {
    by_rank.push_back(Decoded(EncodeOrDie(rank)));
  }
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const v1::AggregatorMessage> message,
      MergeRound(0, 0, by_rank, kNoLimit, {}, 1.0));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(DecodedPayload got,
                                 DecodeMerged(message->merged_layer()));
  EXPECT_EQ(got.indices, (std::vector<uint32_t>{2, 5}));
  EXPECT_EQ(got.values, (std::vector<float>{0.5f, 0.5f}));
}

// A merge that left entries out is never dense, even where dense would be
// smaller: a rank reads every index of a dense payload as applied. The
// union of the same round does go dense.
TEST(MergeRoundTest, AMergeThatLeftEntriesOutIsNeverDense) {
  constexpr uint64_t kSmall = 64;
  std::vector<SparseVector> ranks = {{kSmall, {}, {}}, {kSmall, {}, {}}};
  for (uint32_t i = 0; i < kSmall; ++i) {
    ranks[i % 2].indices.push_back(i);
    ranks[i % 2].values.push_back(1.0f + static_cast<float>(i));
  }
  std::vector<std::optional<DecodedPayload>> by_rank;
  for (const SparseVector& rank : ranks) {
    by_rank.push_back(Decoded(EncodeOrDie(rank)));
  }
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const v1::AggregatorMessage> capped,
      MergeRound(0, 0, by_rank, kNoLimit, {}, 63.0 / 32.0));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const v1::AggregatorMessage> union_merge,
      MergeRound(0, 0, by_rank, kNoLimit, {}, 0.0));
  EXPECT_EQ(union_merge->merged_layer().payload().index_encoding(),
            v1::INDEX_ENCODING_DENSE);
  EXPECT_NE(capped->merged_layer().payload().index_encoding(),
            v1::INDEX_ENCODING_DENSE);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(DecodedPayload got,
                                 DecodeMerged(capped->merged_layer()));
  // 63 of 64 (ceil(63/32 * 32)): all but index 0, the smallest. Dense
  // would take 256 bytes, the bitmap 8 + 252.
  ASSERT_EQ(got.indices.size(), 63u);
  EXPECT_EQ(got.indices.front(), 1u);
  EXPECT_EQ(got.indices.back(), 63u);
}

// A merge that left entries out takes the sparse encoding with the fewest
// index bytes, gap_range only where every rank decodes it. 1023 of 1024
// consecutive indices are a case the codec's automatic choice would not
// cost gap_range for (the bitmap wins among the others), and where it
// wins: a run of gaps of 1 codes to a few bytes.
TEST(MergeRoundTest, AKeepFactorTakesTheFewestIndexBytesGapRangeIfAccepted) {
  std::mt19937 rng(5);
  std::vector<std::vector<SparseVector>> rounds;
  rounds.push_back({});
  for (size_t count : {400, 300}) {
    rounds.back().push_back(RandomSparse(kNumel, count, rng));
  }
  constexpr uint64_t kSmall = 1024;
  rounds.push_back({{kSmall, {}, {}}, {kSmall, {}, {}}});
  for (uint32_t i = 0; i < kSmall; ++i) {
    rounds.back()[i % 2].indices.push_back(i);
    rounds.back()[i % 2].values.push_back(1.0f + static_cast<float>(i));
  }
  for (const std::vector<SparseVector>& ranks : rounds) {
    std::vector<std::optional<DecodedPayload>> by_rank;
    for (const SparseVector& rank : ranks) {
      by_rank.push_back(Decoded(EncodeOrDie(rank)));
    }
    const uint64_t numel = ranks.front().numel;
    std::vector<uint32_t> indices_by_arm[2];
    for (const bool gap_range_accepted : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "numel " << numel << ", gap_range "
                                        << gap_range_accepted);
      ENTROGRAD_ASSERT_OK_AND_ASSIGN(
          std::shared_ptr<const v1::AggregatorMessage> message,
          MergeRound(0, 0, by_rank, kNoLimit, {},
                     numel == kSmall ? (kSmall - 1.0) / (kSmall / 2) : 1.0,
                     gap_range_accepted));
      const v1::SparsePayload& payload = message->merged_layer().payload();
      ENTROGRAD_ASSERT_OK_AND_ASSIGN(DecodedPayload got,
                                     DecodeMerged(message->merged_layer()));
      int64_t fewest = IndexBytes(IndexEncoding::kRawU32, numel, got.indices);
      for (IndexEncoding encoding :
           {IndexEncoding::kDeltaVarint, IndexEncoding::kBitmap}) {
        fewest = std::min(fewest, IndexBytes(encoding, numel, got.indices));
      }
      const int64_t gap_range =
          IndexBytes(IndexEncoding::kGapRange, numel, got.indices);
      if (gap_range_accepted) {
        ASSERT_LT(gap_range, fewest) << "the cases are chosen for gap_range";
        EXPECT_EQ(payload.index_encoding(), v1::INDEX_ENCODING_GAP_RANGE);
      } else {
        EXPECT_NE(payload.index_encoding(), v1::INDEX_ENCODING_GAP_RANGE);
      }
      EXPECT_EQ(static_cast<int64_t>(payload.index_bytes().size()),
                gap_range_accepted ? gap_range : fewest);
      indices_by_arm[gap_range_accepted ? 1 : 0] = got.indices;
    }
    EXPECT_EQ(indices_by_arm[0], indices_by_arm[1]);
  }
}

TEST(GlobalKeepCountTest, IsTheCeilingOfFactorTimesTheLargestCount) {
  EXPECT_EQ(aggregator::GlobalKeepCount(1.0, 174), 174u);
  EXPECT_EQ(aggregator::GlobalKeepCount(1.5, 3), 5u);
  EXPECT_EQ(aggregator::GlobalKeepCount(1e6, 4294967295u),
            uint64_t{4294967295000000});
  EXPECT_EQ(aggregator::GlobalKeepCount(0.0, 5),
            std::numeric_limits<uint64_t>::max());
}

// The round's factor: any rank asking for the union wins; otherwise the
// largest; the same whatever the order the ranks arrive in.
TEST(MergedKeepFactorTest, AnyUnionWinsElseTheLargestInAnyOrder) {
  std::vector<double> factors = {1.0, 3.0, 2.0};
  do {
    aggregator::MergedKeepFactor fold;
    for (double factor : factors) fold.Add(factor);
    EXPECT_EQ(fold.factor(), 3.0);
  } while (std::next_permutation(factors.begin(), factors.end()));
  factors = {0.0, 2.0, 5.0};
  do {
    aggregator::MergedKeepFactor fold;
    for (double factor : factors) fold.Add(factor);
    EXPECT_EQ(fold.factor(), 0.0);
  } while (std::next_permutation(factors.begin(), factors.end()));
}

}  // namespace
}  // namespace entrograd::testing
