// Arrival order cannot reach the merged bits: contributions added to a
// RoundContributions in any permutation merge to the same bytes.

#include "aggregator/merge/round_contributions.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "aggregator/merge/sparse_merge.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "merge_test_util.h"
#include "support/status_matchers.h"

namespace entrograd::aggregator {
namespace {

using ::entrograd::testing::StatusIs;
using testing::BitsOf;
using testing::RandomRound;
using testing::Round;

MergedUpdate MergeInArrivalOrder(const Round& round,
                                 const std::vector<int>& arrival) {
  RoundContributions contributions(round.numel,
                                   static_cast<int>(round.ranks.size()));
  for (int rank : arrival) {
    const auto& c = round.ranks[rank];
    const absl::Status status =
        c.dense ? contributions.AddDense(rank, c.values)
                : contributions.AddSparse(rank, c.indices, c.values);
    EXPECT_TRUE(status.ok()) << status;
  }
  EXPECT_TRUE(contributions.complete());
  SparseMerger merger;
  MergedUpdate merged;
  const absl::Status status = contributions.Merge(merger, &merged);
  EXPECT_TRUE(status.ok()) << status;
  return merged;
}

TEST(RoundContributionsTest, ArrivalOrderDoesNotChangeTheBits) {
  for (int world_size : {2, 3, 4, 8, 64}) {
    for (uint64_t seed = 0; seed < 4; ++seed) {
      const Round round = RandomRound(3001, world_size, 90 + seed, true, true);
      std::vector<int> arrival(world_size);
      std::iota(arrival.begin(), arrival.end(), 0);
      const MergedUpdate in_rank_order = MergeInArrivalOrder(round, arrival);
      std::mt19937_64 rng(seed);
      for (int permutation = 0; permutation < 8; ++permutation) {
        if (permutation == 0) {
          std::reverse(arrival.begin(), arrival.end());
        } else {
          std::shuffle(arrival.begin(), arrival.end(), rng);
        }
        const MergedUpdate merged = MergeInArrivalOrder(round, arrival);
        EXPECT_EQ(merged.indices, in_rank_order.indices);
        EXPECT_EQ(BitsOf(merged.values), BitsOf(in_rank_order.values));
      }
    }
  }
}

// Distinct mergers on distinct threads give the same bytes as one thread.
TEST(RoundContributionsTest, ConcurrentMergersAgree) {
  const Round round = RandomRound(200000, 8, 7, true, true);
  const std::vector<RankContribution> views = round.Views();
  MergedUpdate expected;
  SparseMerger merger;
  ENTROGRAD_ASSERT_OK(merger.Merge(round.numel, 8, views, &expected));
  std::vector<MergedUpdate> results(4);
  std::vector<std::thread> threads;
  for (MergedUpdate& result : results) {
    threads.emplace_back([&round, &views, &result] {
      SparseMerger own;
      EXPECT_TRUE(own.Merge(round.numel, 8, views, &result).ok());
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const MergedUpdate& result : results) {
    EXPECT_EQ(result.indices, expected.indices);
    EXPECT_EQ(BitsOf(result.values), BitsOf(expected.values));
  }
}

TEST(RoundContributionsTest, RejectsRankOutsideTheRound) {
  RoundContributions contributions(10, 2);
  EXPECT_THAT(
      contributions.AddSparse(2, {}, {}),
      StatusIs(absl::StatusCode::kInvalidArgument, "rank 2: outside [0, 2)"));
  EXPECT_THAT(
      contributions.AddDense(-1, std::vector<float>(10, 0.0f)),
      StatusIs(absl::StatusCode::kInvalidArgument, "rank -1: outside [0, 2)"));
  EXPECT_EQ(contributions.received(), 0);
}

TEST(RoundContributionsTest, RejectsSecondContributionOfARank) {
  RoundContributions contributions(10, 2);
  ENTROGRAD_ASSERT_OK(contributions.AddSparse(1, {3}, {1.0f}));
  EXPECT_THAT(contributions.AddSparse(1, {4}, {2.0f}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "rank 1: already contributed"));
  EXPECT_EQ(contributions.received(), 1);
  EXPECT_FALSE(contributions.complete());
}

TEST(RoundContributionsTest, MergeBeforeCompleteNamesTheMissingRank) {
  RoundContributions contributions(10, 3);
  ENTROGRAD_ASSERT_OK(contributions.AddSparse(0, {3}, {1.0f}));
  ENTROGRAD_ASSERT_OK(contributions.AddSparse(2, {3}, {1.0f}));
  SparseMerger merger;
  MergedUpdate merged;
  EXPECT_THAT(contributions.Merge(merger, &merged),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "rank 1: has not contributed yet (2 of 3 received)"));
}

TEST(RoundContributionsTest, BadContentIsReportedByTheMerge) {
  RoundContributions contributions(10, 2);
  ENTROGRAD_ASSERT_OK(contributions.AddSparse(0, {3}, {1.0f}));
  ENTROGRAD_ASSERT_OK(contributions.AddSparse(1, {3, 11}, {1.0f, 2.0f}));
  SparseMerger merger;
  MergedUpdate merged;
  EXPECT_THAT(contributions.Merge(merger, &merged),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "rank 1: index 11 at position 1 is >= numel 10"));
}

}  // namespace
}  // namespace entrograd::aggregator
