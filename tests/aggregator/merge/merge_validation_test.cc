// Every bad input rejects the round with INVALID_ARGUMENT, a message naming
// the rank and position, and an empty output.

#include <cstdint>
#include <limits>
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
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr MergeStrategy kStrategies[] = {MergeStrategy::kBlockedAccumulate,
                                         MergeStrategy::kKWayMerge,
                                         MergeStrategy::kSmallBlockAccumulate};

const std::vector<uint32_t> kGoodIndices = {1, 3};
const std::vector<float> kGoodValues = {1.0f, 2.0f};

// Merges {good, bad, good} (bad at rank 1) with numel 10, expecting the
// error, and checks the output was cleared.
void ExpectRejected(const RankContribution& bad, absl::string_view message) {
  const RankContribution good =
      RankContribution::Sparse(kGoodIndices, kGoodValues);
  const std::vector<RankContribution> ranks = {good, bad, good};
  SparseMerger merger;
  MergedUpdate merged;
  merged.numel = 99;
  merged.indices = {7};
  merged.values = {7.0f};
  EXPECT_THAT(merger.Merge(10, 3, ranks, &merged),
              StatusIs(absl::StatusCode::kInvalidArgument, message));
  EXPECT_EQ(merged.numel, 0u);
  EXPECT_THAT(merged.indices, IsEmpty());
  EXPECT_THAT(merged.values, IsEmpty());
}

TEST(MergeValidationTest, IndicesAndValuesSizesDiffer) {
  const std::vector<uint32_t> indices = {1, 2, 3};
  const std::vector<float> values = {1.0f, 2.0f};
  ExpectRejected(RankContribution::Sparse(indices, values),
                 "rank 1: 3 indices but 2 values");
}

TEST(MergeValidationTest, DescendingIndex) {
  const std::vector<uint32_t> indices = {1, 7, 5};
  const std::vector<float> values = {1.0f, 2.0f, 3.0f};
  ExpectRejected(RankContribution::Sparse(indices, values),
                 "rank 1: index 5 at position 2 is not greater than previous "
                 "index 7 (descending)");
}

TEST(MergeValidationTest, RepeatedIndex) {
  const std::vector<uint32_t> indices = {4, 4};
  const std::vector<float> values = {1.0f, 2.0f};
  ExpectRejected(RankContribution::Sparse(indices, values),
                 "rank 1: index 4 at position 1 is not greater than previous "
                 "index 4 (repeated)");
}

TEST(MergeValidationTest, IndexOutOfRange) {
  const std::vector<uint32_t> indices = {2, 10};
  const std::vector<float> values = {1.0f, 2.0f};
  ExpectRejected(RankContribution::Sparse(indices, values),
                 "rank 1: index 10 at position 1 is >= numel 10");
}

TEST(MergeValidationTest, NaNValue) {
  const std::vector<uint32_t> indices = {2, 3};
  const std::vector<float> values = {1.0f, kNaN};
  ExpectRejected(RankContribution::Sparse(indices, values),
                 "rank 1: value nan at position 1 is not finite");
}

TEST(MergeValidationTest, InfValues) {
  const std::vector<uint32_t> indices = {2};
  const std::vector<float> plus = {kInf}, minus = {-kInf};
  ExpectRejected(RankContribution::Sparse(indices, plus),
                 "rank 1: value inf at position 0 is not finite");
  ExpectRejected(RankContribution::Sparse(indices, minus),
                 "rank 1: value -inf at position 0 is not finite");
}

TEST(MergeValidationTest, NonFiniteInDenseRank) {
  std::vector<float> dense(10, 0.0f);
  dense[6] = kNaN;
  ExpectRejected(RankContribution::Dense(dense),
                 "rank 1: value nan at position 6 is not finite");
}

TEST(MergeValidationTest, DenseRankOfWrongSize) {
  const std::vector<float> dense(9, 1.0f);
  ExpectRejected(RankContribution::Dense(dense),
                 "rank 1: dense contribution has 9 values for numel 10");
}

TEST(MergeValidationTest, DenseRankWithIndices) {
  const std::vector<float> dense(10, 1.0f);
  RankContribution bad = RankContribution::Dense(dense);
  bad.indices = kGoodIndices;
  ExpectRejected(bad, "rank 1: dense contribution with 2 indices");
}

TEST(MergeValidationTest, WrongNumberOfRanks) {
  const std::vector<RankContribution> ranks(2, RankContribution{});
  SparseMerger merger;
  MergedUpdate merged;
  EXPECT_THAT(merger.Merge(10, 3, ranks, &merged),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "contributions: 2 ranks for world_size 3"));
  EXPECT_THAT(merger.Merge(10, 0, {}, &merged),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "world_size: 0 must be >= 1"));
}

TEST(MergeValidationTest, BadNumel) {
  const std::vector<RankContribution> ranks(1, RankContribution{});
  SparseMerger merger;
  MergedUpdate merged;
  EXPECT_THAT(
      merger.Merge(0, 1, ranks, &merged),
      StatusIs(absl::StatusCode::kInvalidArgument, "numel: must not be 0"));
  EXPECT_THAT(
      merger.Merge(kMaxPayloadNumel + 1, 1, ranks, &merged),
      StatusIs(absl::StatusCode::kInvalidArgument, "exceeds kMaxPayloadNumel"));
}

TEST(MergeValidationTest, ForcedStrategyValidatesToo) {
  const std::vector<uint32_t> indices = {3, 2};
  const std::vector<float> values = {1.0f, 2.0f};
  const std::vector<RankContribution> ranks = {
      RankContribution::Sparse(indices, values)};
  for (MergeStrategy strategy : kStrategies) {
    SparseMerger merger;
    MergedUpdate merged;
    EXPECT_THAT(merger.MergeWith(strategy, 10, 1, ranks, &merged),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "rank 0: index 2 at position 1"));
  }
}

// Finite inputs whose sum overflows: rejected, never sent as Inf, and the
// merger's scratch is clean for the next round.
TEST(MergeValidationTest, OverflowingSumRejectsTheRound) {
  const std::vector<uint32_t> indices = {1, 70000};
  const std::vector<float> values = {1.0f, 3e38f};
  const std::vector<RankContribution> ranks = {
      RankContribution::Sparse(indices, values),
      RankContribution::Sparse(indices, values)};
  const std::vector<uint32_t> next_indices = {1, 2};
  const std::vector<float> next_values = {4.0f, 6.0f};
  const std::vector<RankContribution> next = {
      RankContribution::Sparse(next_indices, next_values),
      RankContribution::Sparse({}, {})};
  for (MergeStrategy strategy : kStrategies) {
    SparseMerger merger;
    MergedUpdate merged;
    EXPECT_THAT(merger.MergeWith(strategy, 100000, 2, ranks, &merged),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "merged sum at index 70000 overflows float32"));
    EXPECT_THAT(merged.indices, IsEmpty());
    ENTROGRAD_ASSERT_OK(merger.MergeWith(strategy, 100000, 2, next, &merged));
    EXPECT_THAT(merged.indices, ElementsAre(1, 2));
    EXPECT_THAT(merged.values, ElementsAre(2.0f, 3.0f));
  }
}

// BlockedAccumulate checks the contents block by block while it merges
// (blocks of 65536 elements). Bad input deep in the round, after good
// blocks were already emitted, must still reject the round with the same
// message ValidateRound gives, leave the output empty and the scratch clean
// for the next round; in both the sparse (summary bitmap) and denser modes.
class LateErrorTest : public ::testing::TestWithParam<uint32_t> {
 protected:
  static constexpr uint64_t kNumel = 300000;
  // A valid rank: every `stride`-th element (stride 7: the denser mode;
  // 5000: sparse).
  void SetUp() override {
    for (uint32_t i = 0; i < kNumel; i += GetParam()) {
      good_indices_.push_back(i);
      good_values_.push_back(1.0f);
    }
  }
  // Merges {good, bad, good} with each strategy, expecting `message`, then
  // merges {good, good, good} with the same merger and checks the result.
  void ExpectRejected(const std::vector<uint32_t>& bad_indices,
                      const std::vector<float>& bad_values,
                      absl::string_view message) {
    const RankContribution good =
        RankContribution::Sparse(good_indices_, good_values_);
    const std::vector<RankContribution> ranks = {
        good, RankContribution::Sparse(bad_indices, bad_values), good};
    const std::vector<RankContribution> all_good = {good, good, good};
    for (MergeStrategy strategy : kStrategies) {
      SparseMerger merger;
      MergedUpdate merged;
      EXPECT_THAT(merger.MergeWith(strategy, kNumel, 3, ranks, &merged),
                  StatusIs(absl::StatusCode::kInvalidArgument, message));
      EXPECT_EQ(merged.numel, 0u);
      EXPECT_THAT(merged.indices, IsEmpty());
      EXPECT_THAT(merged.values, IsEmpty());
      ENTROGRAD_ASSERT_OK(
          merger.MergeWith(strategy, kNumel, 3, all_good, &merged));
      EXPECT_EQ(merged.indices, good_indices_);
      EXPECT_EQ(merged.values, good_values_);
    }
  }
  std::vector<uint32_t> good_indices_;
  std::vector<float> good_values_;
};

TEST_P(LateErrorTest, DescendingAcrossBlocks) {
  ExpectRejected({5, 70000, 65600, 200000}, {1.0f, 1.0f, 1.0f, 1.0f},
                 "rank 1: index 65600 at position 2 is not greater than "
                 "previous index 70000 (descending)");
}

TEST_P(LateErrorTest, RepeatedInLateBlock) {
  ExpectRejected({5, 200000, 200000}, {1.0f, 1.0f, 1.0f},
                 "rank 1: index 200000 at position 2 is not greater than "
                 "previous index 200000 (repeated)");
}

TEST_P(LateErrorTest, DescendingTail) {
  // Out of order only at the very end: the run search leaves it unconsumed.
  ExpectRejected({5, 299999, 3}, {1.0f, 1.0f, 1.0f},
                 "rank 1: index 3 at position 2 is not greater than previous "
                 "index 299999 (descending)");
}

TEST_P(LateErrorTest, IndexOutOfRangeAtTheEnd) {
  ExpectRejected({5, 200000, 300000}, {1.0f, 1.0f, 1.0f},
                 "rank 1: index 300000 at position 2 is >= numel 300000");
}

TEST_P(LateErrorTest, InfInLateBlock) {
  ExpectRejected({5, 200000, 250000}, {1.0f, 1.0f, kInf},
                 "rank 1: value inf at position 2 is not finite");
}

TEST_P(LateErrorTest, LowerRankErrorWinsOverEarlierBlock) {
  // Rank 0 goes bad in the last block, rank 1 in the first: rank 0 is named.
  const std::vector<uint32_t> late_bad = {5, 290000, 289999};
  const std::vector<uint32_t> early_bad = {7, 6};
  const std::vector<float> ones = {1.0f, 1.0f, 1.0f};
  const std::vector<RankContribution> ranks = {
      RankContribution::Sparse(late_bad, ones),
      RankContribution::Sparse(early_bad, absl::MakeSpan(ones).subspan(0, 2)),
      RankContribution::Sparse(good_indices_, good_values_)};
  for (MergeStrategy strategy : kStrategies) {
    SparseMerger merger;
    MergedUpdate merged;
    EXPECT_THAT(merger.MergeWith(strategy, kNumel, 3, ranks, &merged),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "rank 0: index 289999 at position 2"));
    EXPECT_THAT(merged.indices, IsEmpty());
  }
}

TEST_P(LateErrorTest, InputErrorWinsOverEarlierOverflow) {
  // The sum at index 1 overflows in the first block; a NaN comes later.
  const std::vector<uint32_t> indices = {1, 250000};
  const std::vector<float> big = {3e38f, 1.0f};
  const std::vector<float> nan_late = {3e38f, kNaN};
  const std::vector<RankContribution> ranks = {
      RankContribution::Sparse(indices, big),
      RankContribution::Sparse(indices, nan_late),
      RankContribution::Sparse(good_indices_, good_values_)};
  for (MergeStrategy strategy : kStrategies) {
    SparseMerger merger;
    MergedUpdate merged;
    EXPECT_THAT(merger.MergeWith(strategy, kNumel, 3, ranks, &merged),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "rank 1: value nan at position 1 is not finite"));
    EXPECT_THAT(merged.indices, IsEmpty());
  }
}

INSTANTIATE_TEST_SUITE_P(Densities, LateErrorTest,
                         ::testing::Values(7u, 5000u));

}  // namespace
}  // namespace entrograd::aggregator
