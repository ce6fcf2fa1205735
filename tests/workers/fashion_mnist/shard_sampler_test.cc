#include "workers/fashion_mnist/shard_sampler.h"

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::workers {
namespace {

using ::entrograd::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

TEST(StepsPerEpochTest, IsFloorOfSamplesOverGlobalBatch) {
  EXPECT_EQ(StepsPerEpoch(60000, 1, 64), 937);
  EXPECT_EQ(StepsPerEpoch(60000, 4, 64), 234);
  EXPECT_EQ(StepsPerEpoch(60000, 3, 64), 312);
  EXPECT_EQ(StepsPerEpoch(10, 2, 2), 2);
  EXPECT_EQ(StepsPerEpoch(8, 2, 2), 2);
  EXPECT_EQ(StepsPerEpoch(3, 2, 2), 0);
}

TEST(StepsPerEpochTest, NonPositiveArgumentsGiveZero) {
  EXPECT_EQ(StepsPerEpoch(0, 1, 1), 0);
  EXPECT_EQ(StepsPerEpoch(10, 0, 1), 0);
  EXPECT_EQ(StepsPerEpoch(10, 1, 0), 0);
  EXPECT_EQ(StepsPerEpoch(-10, 1, 1), 0);
}

TEST(StepsPerEpochTest, HugeBatchDoesNotOverflow) {
  EXPECT_EQ(StepsPerEpoch(60000, 1 << 30, int64_t{1} << 40), 0);
}

// The order rests on the engine's output, which the standard pins: the
// 10000th value of a default-constructed mt19937_64.
TEST(EpochPermutationTest, EngineIsTheStandardOne) {
  std::mt19937_64 engine;
  engine.discard(9999);
  EXPECT_EQ(engine(), 9981545732273789042ULL);
}

// Golden orders, computed independently by a Python reimplementation of
// mt19937_64, Mix64 and the Fisher-Yates loop. A change here changes every
// training run's data order: only on purpose.
TEST(EpochPermutationTest, MatchesGoldenOrders) {
  EXPECT_THAT(EpochPermutation(10, 42, 0),
              ElementsAre(2, 0, 4, 7, 8, 3, 5, 1, 9, 6));
  EXPECT_THAT(EpochPermutation(10, 42, 1),
              ElementsAre(2, 8, 7, 3, 6, 4, 0, 9, 5, 1));
  EXPECT_THAT(EpochPermutation(10, 7, 0),
              ElementsAre(5, 6, 2, 8, 4, 9, 7, 3, 1, 0));
  const std::vector<int64_t> long_order = EpochPermutation(1000, 42, 3);
  EXPECT_THAT(std::vector<int64_t>(long_order.begin(), long_order.begin() + 8),
              ElementsAre(602, 182, 304, 608, 484, 426, 708, 352));
}

TEST(EpochPermutationTest, IsAPermutation) {
  std::vector<int64_t> order = EpochPermutation(60000, 1, 5);
  std::sort(order.begin(), order.end());
  for (int64_t i = 0; i < 60000; ++i) ASSERT_EQ(order[i], i);
}

TEST(EpochPermutationTest, TrivialSizes) {
  EXPECT_TRUE(EpochPermutation(0, 1, 0).empty());
  EXPECT_THAT(EpochPermutation(1, 1, 0), ElementsAre(0));
}

TEST(EpochPermutationTest, DependsOnSeedAndEpoch) {
  const std::vector<int64_t> base = EpochPermutation(1000, 1, 0);
  EXPECT_NE(EpochPermutation(1000, 1, 1), base);
  EXPECT_NE(EpochPermutation(1000, 2, 0), base);
  // The seed and epoch are mixed, not added: (1, 1) and (2, 0) differ too.
  EXPECT_NE(EpochPermutation(1000, 1, 1), EpochPermutation(1000, 2, 0));
  EXPECT_EQ(EpochPermutation(1000, 1, 0), base);
}

// N = 10, W = 2, B = 2, seed 42: two steps per epoch, each taking a block
// of four from the golden order, rank r the r-th pair; the last two
// samples of each epoch's order are skipped.
TEST(ShardSamplerTest, HandCheckedTinyCase) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(ShardSampler sampler,
                                 ShardSampler::Create(10, 2, 2, 42));
  EXPECT_EQ(sampler.steps_per_epoch(), 2);
  // Epoch 0 order: 2 0 | 4 7 | 8 3 | 5 1 | (9 6 skipped).
  EXPECT_THAT(*sampler.Batch(0, 0, 0), ElementsAre(2, 0));
  EXPECT_THAT(*sampler.Batch(0, 0, 1), ElementsAre(4, 7));
  EXPECT_THAT(*sampler.Batch(0, 1, 0), ElementsAre(8, 3));
  EXPECT_THAT(*sampler.Batch(0, 1, 1), ElementsAre(5, 1));
  // Epoch 1 order: 2 8 | 7 3 | 6 4 | 0 9 | (5 1 skipped).
  EXPECT_THAT(*sampler.Batch(1, 0, 0), ElementsAre(2, 8));
  EXPECT_THAT(*sampler.Batch(1, 0, 1), ElementsAre(7, 3));
  EXPECT_THAT(*sampler.Batch(1, 1, 0), ElementsAre(6, 4));
  EXPECT_THAT(*sampler.Batch(1, 1, 1), ElementsAre(0, 9));
  // Back to epoch 0 after the cache moved on.
  EXPECT_THAT(*sampler.Batch(0, 1, 1), ElementsAre(5, 1));
}

struct CoverageCase {
  int64_t num_samples;
  int world_size;
  int64_t batch_size;
};

// gtest would otherwise print the struct's raw bytes, padding included,
// into the test names ctest registers, which then change from build to
// build.
std::string CaseText(const CoverageCase& c) {
  return "N" + std::to_string(c.num_samples) + "W" +
         std::to_string(c.world_size) + "B" + std::to_string(c.batch_size);
}
void PrintTo(const CoverageCase& c, std::ostream* os) { *os << CaseText(c); }
std::string CaseName(const ::testing::TestParamInfo<CoverageCase>& info) {
  return CaseText(info.param);
}

class ShardCoverageTest : public ::testing::TestWithParam<CoverageCase> {};

INSTANTIATE_TEST_SUITE_P(Sizes, ShardCoverageTest,
                         ::testing::Values(CoverageCase{60000, 1, 64},
                                           CoverageCase{60000, 3, 64},
                                           CoverageCase{60000, 4, 64},
                                           CoverageCase{1000, 7, 13},
                                           CoverageCase{10, 2, 5}),
                         CaseName);

// Every epoch: each rank's batches are disjoint from every other batch, and
// together they cover exactly StepsPerEpoch * W * B distinct valid indices.
TEST_P(ShardCoverageTest, ShardsAreDisjointAndCoverTheEpoch) {
  const CoverageCase c = GetParam();
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      ShardSampler sampler,
      ShardSampler::Create(c.num_samples, c.world_size, c.batch_size, 9));
  const int64_t steps =
      StepsPerEpoch(c.num_samples, c.world_size, c.batch_size);
  ASSERT_EQ(sampler.steps_per_epoch(), steps);
  std::vector<std::set<int64_t>> epoch_sets;
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    std::set<int64_t> seen;
    for (int64_t step = 0; step < steps; ++step) {
      for (int rank = 0; rank < c.world_size; ++rank) {
        ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::vector<int64_t> batch,
                                       sampler.Batch(epoch, step, rank));
        ASSERT_EQ(static_cast<int64_t>(batch.size()), c.batch_size);
        for (int64_t index : batch) {
          ASSERT_GE(index, 0);
          ASSERT_LT(index, c.num_samples);
          ASSERT_TRUE(seen.insert(index).second)
              << "index " << index << " drawn twice in epoch " << epoch;
        }
      }
    }
    EXPECT_EQ(static_cast<int64_t>(seen.size()),
              steps * c.world_size * c.batch_size);
    epoch_sets.push_back(std::move(seen));
  }
  // Whenever samples are skipped, different epochs skip different ones
  // (for these sizes; a coincidence is astronomically unlikely).
  if (steps * c.world_size * c.batch_size < c.num_samples) {
    EXPECT_NE(epoch_sets[0], epoch_sets[1]);
  }
}

TEST(ShardSamplerTest, EpochsDiffer) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(ShardSampler sampler,
                                 ShardSampler::Create(60000, 2, 64, 3));
  EXPECT_NE(*sampler.Batch(0, 0, 0), *sampler.Batch(1, 0, 0));
  EXPECT_NE(*sampler.Batch(1, 5, 1), *sampler.Batch(2, 5, 1));
}

// Two samplers standing for two machines with the same configuration.
TEST(ShardSamplerTest, SameSeedSameBatches) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(ShardSampler a,
                                 ShardSampler::Create(60000, 4, 64, 17));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(ShardSampler b,
                                 ShardSampler::Create(60000, 4, 64, 17));
  for (int64_t epoch : {0, 1, 7}) {
    for (int64_t step : {0, 100, 233}) {
      for (int rank = 0; rank < 4; ++rank) {
        EXPECT_EQ(*a.Batch(epoch, step, rank), *b.Batch(epoch, step, rank));
      }
    }
  }
}

TEST(ShardSamplerTest, DifferentSeedDifferentBatches) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(ShardSampler a,
                                 ShardSampler::Create(60000, 4, 64, 17));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(ShardSampler b,
                                 ShardSampler::Create(60000, 4, 64, 18));
  EXPECT_NE(*a.Batch(0, 0, 0), *b.Batch(0, 0, 0));
}

// The global batch of a step is the same slice of the order whatever W is:
// W ranks with batch B see what one process with batch W * B sees.
TEST(ShardSamplerTest, GlobalBatchIndependentOfWorldSize) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(ShardSampler single,
                                 ShardSampler::Create(6000, 1, 64, 5));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(ShardSampler split,
                                 ShardSampler::Create(6000, 4, 16, 5));
  for (int64_t step : {0, 3, 92}) {
    std::vector<int64_t> joined;
    for (int rank = 0; rank < 4; ++rank) {
      const std::vector<int64_t> part = *split.Batch(2, step, rank);
      joined.insert(joined.end(), part.begin(), part.end());
    }
    EXPECT_THAT(joined, ElementsAreArray(*single.Batch(2, step, 0)));
  }
}

TEST(ShardSamplerTest, CreateRejectsBadConfigurations) {
  EXPECT_THAT(ShardSampler::Create(-1, 1, 1, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, "num_samples"));
  EXPECT_THAT(ShardSampler::Create(10, 0, 1, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, "world_size"));
  EXPECT_THAT(ShardSampler::Create(10, 1, 0, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, "batch_size"));
  EXPECT_THAT(ShardSampler::Create(7, 2, 4, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "less than one global batch"));
}

TEST(ShardSamplerTest, BatchRejectsOutOfRangeArguments) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(ShardSampler sampler,
                                 ShardSampler::Create(10, 2, 2, 42));
  EXPECT_THAT(sampler.Batch(-1, 0, 0),
              StatusIs(absl::StatusCode::kOutOfRange, "epoch"));
  EXPECT_THAT(sampler.Batch(0, 2, 0), StatusIs(absl::StatusCode::kOutOfRange,
                                               "step: 2 outside [0, 2)"));
  EXPECT_THAT(sampler.Batch(0, -1, 0),
              StatusIs(absl::StatusCode::kOutOfRange, "step"));
  EXPECT_THAT(sampler.Batch(0, 0, 2), StatusIs(absl::StatusCode::kOutOfRange,
                                               "rank: 2 outside [0, 2)"));
  EXPECT_THAT(sampler.Batch(0, 0, -1),
              StatusIs(absl::StatusCode::kOutOfRange, "rank"));
}

}  // namespace
}  // namespace entrograd::workers
