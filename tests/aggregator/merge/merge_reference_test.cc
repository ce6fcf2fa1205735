// The merge equals the definition bitwise, for every strategy, over many
// random rounds; signed zeros and absent ranks behave as documented.

#include <cstdint>
#include <vector>

#include "absl/base/casts.h"
#include "aggregator/merge/merge_strategies.h"
#include "aggregator/merge/sparse_merge.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "merge_test_util.h"
#include "support/status_matchers.h"

namespace entrograd::aggregator {
namespace {

using merge_internal::kBlockElements;
using merge_internal::kSmallBlockElements;
using testing::BitsOf;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::RandomRound;
using testing::ReferenceMerge;
using testing::Round;

constexpr MergeStrategy kStrategies[] = {MergeStrategy::kBlockedAccumulate,
                                         MergeStrategy::kKWayMerge,
                                         MergeStrategy::kSmallBlockAccumulate};

void ExpectBitwiseEqual(const MergedUpdate& actual,
                        const MergedUpdate& expected) {
  EXPECT_EQ(actual.numel, expected.numel);
  EXPECT_EQ(actual.indices, expected.indices);
  EXPECT_EQ(BitsOf(actual.values), BitsOf(expected.values));
}

// Merges `round` with Merge and with each forced strategy, all through the
// one long-lived merger so scratch reuse across rounds is exercised too.
void ExpectMatchesReference(SparseMerger& merger, const Round& round) {
  const MergedUpdate expected = ReferenceMerge(round);
  const std::vector<RankContribution> views = round.Views();
  const int world_size = static_cast<int>(round.ranks.size());
  MergedUpdate merged;
  ENTROGRAD_ASSERT_OK(merger.Merge(round.numel, world_size, views, &merged));
  ExpectBitwiseEqual(merged, expected);
  for (MergeStrategy strategy : kStrategies) {
    SCOPED_TRACE(static_cast<int>(strategy));
    ENTROGRAD_ASSERT_OK(
        merger.MergeWith(strategy, round.numel, world_size, views, &merged));
    ExpectBitwiseEqual(merged, expected);
  }
}

TEST(MergeReferenceTest, RandomRoundsMatchTheDefinitionBitwise) {
  SparseMerger merger;
  const uint64_t sizes[] = {1, 2, 63, 64, 65, 1000, 4099};
  const int world_sizes[] = {1, 2, 3, 4, 8, 64};
  uint64_t seed = 1;
  for (uint64_t numel : sizes) {
    for (int world_size : world_sizes) {
      for (int repeat = 0; repeat < 6; ++repeat, ++seed) {
        SCOPED_TRACE(seed);
        const bool dense = repeat % 2 == 1;
        const bool signed_zeros = repeat >= 3;
        ExpectMatchesReference(
            merger, RandomRound(numel, world_size, seed, dense, signed_zeros));
      }
    }
  }
}

TEST(MergeReferenceTest, RoundsAcrossSeveralBlocks) {
  SparseMerger merger;
  const uint64_t sizes[] = {kBlockElements - 1, kBlockElements,
                            kBlockElements + 1, 3 * kBlockElements + 17};
  uint64_t seed = 1000;
  for (uint64_t numel : sizes) {
    for (int world_size : {1, 4, 8}) {
      SCOPED_TRACE(seed);
      ExpectMatchesReference(
          merger, RandomRound(numel, world_size, seed++, true, true));
    }
  }
}

// kSmallBlockAccumulate's block edges, over sparse and denser rounds (its
// summary is used only under 0.5 merged pairs per bitmap word, and a word
// of more than 2 bits takes its slow path), with and without dense ranks.
TEST(MergeReferenceTest, RoundsAcrossSeveralSmallBlocks) {
  SparseMerger merger;
  const uint64_t sizes[] = {kSmallBlockElements - 1, kSmallBlockElements,
                            kSmallBlockElements + 1,
                            5 * kSmallBlockElements + 17};
  uint64_t seed = 3000;
  for (uint64_t numel : sizes) {
    for (int world_size : {1, 2, 16}) {
      for (int repeat = 0; repeat < 4; ++repeat) {
        SCOPED_TRACE(seed);
        ExpectMatchesReference(merger, RandomRound(numel, world_size, seed++,
                                                   repeat == 3, repeat >= 2));
      }
    }
  }
}

// Without signed zeros, "absent contributes nothing" and "absent adds +0.0"
// agree: the merge equals dense arrays summed in rank order, divided by W.
TEST(MergeReferenceTest, EqualsZeroFilledDenseSumWithoutSignedZeros) {
  SparseMerger merger;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    const int world_size = 1 + static_cast<int>(seed % 8);
    const Round round = RandomRound(777, world_size, 5000 + seed, true, false);
    MergedUpdate merged;
    ENTROGRAD_ASSERT_OK(
        merger.Merge(round.numel, world_size, round.Views(), &merged));
    std::vector<float> dense(round.numel, 0.0f);
    std::vector<bool> any(round.numel, false);
    for (const auto& rank : round.ranks) {
      for (uint64_t i = 0; i < round.numel; ++i) {
        dense[i] += rank.present[i] ? rank.dense_values[i] : 0.0f;
        any[i] = any[i] || rank.present[i];
      }
    }
    std::vector<uint32_t> expected_indices;
    std::vector<float> expected_values;
    for (uint64_t i = 0; i < round.numel; ++i) {
      if (!any[i]) continue;
      expected_indices.push_back(static_cast<uint32_t>(i));
      expected_values.push_back(dense[i] / static_cast<float>(world_size));
    }
    EXPECT_EQ(merged.indices, expected_indices);
    EXPECT_EQ(BitsOf(merged.values), BitsOf(expected_values));
  }
}

TEST(MergeReferenceTest, AbsentRanksKeepNegativeZero) {
  // Index 1 only carried as -0.0 by rank 1: it merges to -0.0 (adding +0.0
  // for ranks 0 and 2 would have made it +0.0). Index 2: -0.0 + +0.0 = +0.0.
  const std::vector<uint32_t> indices0 = {2};
  const std::vector<float> values0 = {-0.0f};
  const std::vector<uint32_t> indices1 = {1, 2};
  const std::vector<float> values1 = {-0.0f, 0.0f};
  const std::vector<RankContribution> ranks = {
      RankContribution::Sparse(indices0, values0),
      RankContribution::Sparse(indices1, values1),
      RankContribution::Sparse({}, {})};
  for (MergeStrategy strategy : kStrategies) {
    SparseMerger merger;
    MergedUpdate merged;
    ENTROGRAD_ASSERT_OK(merger.MergeWith(strategy, 4, 3, ranks, &merged));
    EXPECT_THAT(merged.indices, ElementsAre(1, 2));
    EXPECT_THAT(BitsOf(merged.values), ElementsAre(0x80000000u, 0u));
  }
}

TEST(MergeReferenceTest, DenseRankCarriesEverythingButPositiveZero) {
  const std::vector<float> dense = {0.0f, -0.0f, 3.0f, 0.0f};
  const std::vector<uint32_t> indices = {0};
  const std::vector<float> values = {1.0f};
  const std::vector<RankContribution> ranks = {
      RankContribution::Dense(dense),
      RankContribution::Sparse(indices, values)};
  for (MergeStrategy strategy : kStrategies) {
    SparseMerger merger;
    MergedUpdate merged;
    ENTROGRAD_ASSERT_OK(merger.MergeWith(strategy, 4, 2, ranks, &merged));
    EXPECT_THAT(merged.indices, ElementsAre(0, 1, 2));
    EXPECT_THAT(BitsOf(merged.values),
                ElementsAre(absl::bit_cast<uint32_t>(0.5f), 0x80000000u,
                            absl::bit_cast<uint32_t>(1.5f)));
  }
}

TEST(MergeReferenceTest, EmptyContributionsMergeToNothing) {
  for (MergeStrategy strategy : kStrategies) {
    SparseMerger merger;
    MergedUpdate merged;
    const std::vector<RankContribution> ranks(3, RankContribution{});
    ENTROGRAD_ASSERT_OK(merger.MergeWith(strategy, 10, 3, ranks, &merged));
    EXPECT_EQ(merged.numel, 10u);
    EXPECT_THAT(merged.indices, IsEmpty());
    EXPECT_THAT(merged.values, IsEmpty());
  }
}

TEST(MergeReferenceTest, SumsInRankOrderNotValueOrder) {
  // float32: (1e8 + 1) - 1e8 = 0 but (1e8 - 1e8) + 1 = 1, so the order shows.
  const std::vector<uint32_t> index = {0};
  const std::vector<float> big = {1e8f}, one = {1.0f}, minus_big = {-1e8f};
  const std::vector<RankContribution> ranks = {
      RankContribution::Sparse(index, big),
      RankContribution::Sparse(index, one),
      RankContribution::Sparse(index, minus_big)};
  for (MergeStrategy strategy : kStrategies) {
    SparseMerger merger;
    MergedUpdate merged;
    ENTROGRAD_ASSERT_OK(merger.MergeWith(strategy, 1, 3, ranks, &merged));
    EXPECT_THAT(BitsOf(merged.values), ElementsAre(0u));  // +0.0 / 3
  }
}

TEST(MergeReferenceTest, MergeContributionsConvenience) {
  const std::vector<uint32_t> indices = {0, 5};
  const std::vector<float> values = {2.0f, 4.0f};
  const std::vector<RankContribution> ranks = {
      RankContribution::Sparse(indices, values)};
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(MergedUpdate merged,
                                 MergeContributions(6, 1, ranks));
  EXPECT_THAT(merged.indices, ElementsAre(0, 5));
  EXPECT_THAT(merged.values, ElementsAre(2.0f, 4.0f));
}

TEST(MergeStrategyTest, ChoosesHeapOnlyForVerySparseRounds) {
  // W=4 and W=16 at 0.1% per rank: under 2 pairs per bitmap word.
  EXPECT_EQ(ChooseMergeStrategy(25'000'000, 100'000, 4),
            MergeStrategy::kSmallBlockAccumulate);
  EXPECT_EQ(ChooseMergeStrategy(25'000'000, 400'000, 16),
            MergeStrategy::kSmallBlockAccumulate);
  // W=4 and W=16 at 1%.
  EXPECT_EQ(ChooseMergeStrategy(25'000'000, 1'000'000, 4),
            MergeStrategy::kBlockedAccumulate);
  EXPECT_EQ(ChooseMergeStrategy(25'000'000, 4'000'000, 16),
            MergeStrategy::kBlockedAccumulate);
  // A dense rank.
  EXPECT_EQ(ChooseMergeStrategy(1000, 1000, 2),
            MergeStrategy::kBlockedAccumulate);
  EXPECT_EQ(ChooseMergeStrategy(25'000'000, 10, 4), MergeStrategy::kKWayMerge);
  EXPECT_EQ(ChooseMergeStrategy(1, 1, 1), MergeStrategy::kBlockedAccumulate);
}

}  // namespace
}  // namespace entrograd::aggregator
