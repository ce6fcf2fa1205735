#include "entrograd/keep_count.h"

#include <cmath>
#include <numeric>
#include <random>

#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd {
namespace {

using ::entrograd::testing::StatusIs;

EntropyStats StatsWithFraction(double f, int64_t m = 256) {
  EntropyStats stats;
  stats.intervals = m;
  stats.effective_fraction = f;
  stats.entropy = std::log(f * m);
  stats.normalized_entropy = stats.entropy / std::log(static_cast<double>(m));
  return stats;
}

TEST(RoundAndClampTest, RoundsHalfAwayFromZeroAndClamps) {
  EXPECT_EQ(RoundAndClamp(2.5, 0, 10), 3);
  EXPECT_EQ(RoundAndClamp(3.5, 0, 10), 4);
  EXPECT_EQ(RoundAndClamp(2.4999, 0, 10), 2);
  EXPECT_EQ(RoundAndClamp(0.3, 1, 10), 1);
  EXPECT_EQ(RoundAndClamp(12.0, 1, 10), 10);
  EXPECT_EQ(RoundAndClamp(std::nan(""), 1, 10), 1);
}

TEST(DecideKeepCountTest, EntropyPolicyFollowsTheFormula) {
  CompressionOptions options;
  options.rho = 0.01;
  options.dense_below = 0;
  // r = 0.01 * 0.75 = 0.0075; k = round(0.0075 * 100000) = 750.
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      KeepDecision decision,
      DecideKeepCount(StatsWithFraction(0.75), 100000, 0, options));
  EXPECT_EQ(decision.k, 750);
  EXPECT_DOUBLE_EQ(decision.keep_ratio, 0.0075);
  EXPECT_FALSE(decision.dense);
}

TEST(DecideKeepCountTest, EntropyPolicyRespectsMinKeepRatioAndAtLeastOne) {
  CompressionOptions options;
  options.rho = 0.001;
  options.dense_below = 0;
  options.min_keep_ratio = 0.0005;
  // rho * f = 0.001 / 256 < 0.0005: r clamps up to r_min; k = 0.0005 * 4000 = 2.
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      KeepDecision decision,
      DecideKeepCount(StatsWithFraction(1.0 / 256), 4000, 0, options));
  EXPECT_DOUBLE_EQ(decision.keep_ratio, 0.0005);
  EXPECT_EQ(decision.k, 2);
  options.min_keep_ratio = 0.0;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      decision, DecideKeepCount(StatsWithFraction(1.0 / 256), 4000, 0, options));
  EXPECT_EQ(decision.k, 1);  // round(0.0156) = 0, clamped to 1
}

TEST(DecideKeepCountTest, KIsMonotoneInRho) {
  std::mt19937 rng(3);
  for (const KeepPolicy policy : {KeepPolicy::kEntropy, KeepPolicy::kTopK}) {
    for (int trial = 0; trial < 200; ++trial) {
      const int64_t numel = 1 + rng() % 1000000;
      const double f = std::uniform_real_distribution<double>(1.0 / 256, 1.0)(rng);
      CompressionOptions options;
      options.policy = policy;
      options.dense_below = 0;
      int64_t previous_k = 0;
      for (double rho = 1e-5; rho <= 1.0; rho *= 1.7) {
        options.rho = rho;
        ENTROGRAD_ASSERT_OK_AND_ASSIGN(
            KeepDecision decision,
            DecideKeepCount(StatsWithFraction(f), numel, 0, options));
        EXPECT_GE(decision.k, previous_k) << "rho=" << rho << " n=" << numel;
        EXPECT_GE(decision.k, 1);
        EXPECT_LE(decision.k, numel);
        previous_k = decision.k;
      }
    }
  }
}

TEST(DecideKeepCountTest, HigherEntropySendsMore) {
  CompressionOptions options;
  options.dense_below = 0;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      KeepDecision low, DecideKeepCount(StatsWithFraction(0.2), 1000000, 0, options));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      KeepDecision high, DecideKeepCount(StatsWithFraction(0.9), 1000000, 0, options));
  EXPECT_LT(low.k, high.k);
}

TEST(DecideKeepCountTest, TopKIgnoresEntropy) {
  CompressionOptions options;
  options.policy = KeepPolicy::kTopK;
  options.rho = 0.001;
  options.dense_below = 0;
  for (double f : {0.01, 0.5, 1.0}) {
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        KeepDecision decision,
        DecideKeepCount(StatsWithFraction(f), 2500000, 0, options));
    EXPECT_EQ(decision.k, 2500);
  }
}

TEST(DecideKeepCountTest, SmallLayersAndDensePolicyAreDense) {
  CompressionOptions options;  // dense_below = 1024
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      KeepDecision decision, DecideKeepCount(StatsWithFraction(0.5), 1023, 0, options));
  EXPECT_TRUE(decision.dense);
  EXPECT_EQ(decision.k, 1023);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      decision, DecideKeepCount(StatsWithFraction(0.5), 1024, 0, options));
  EXPECT_FALSE(decision.dense);
  options.policy = KeepPolicy::kDense;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      decision, DecideKeepCount(StatsWithFraction(0.5), 50000, 0, options));
  EXPECT_TRUE(decision.dense);
  EXPECT_EQ(decision.k, 50000);
}

TEST(DecideKeepCountTest, AllZeroLayerSendsNothing) {
  CompressionOptions options;
  options.dense_below = 0;
  EntropyStats zero;
  zero.intervals = 256;
  zero.all_zero = true;
  zero.effective_fraction = 1.0 / 256;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(KeepDecision decision,
                                 DecideKeepCount(zero, 5000, 0, options));
  EXPECT_EQ(decision.k, 0);
}

TEST(DecideKeepCountTest, WarmupStartsDenserAndReachesRho) {
  CompressionOptions options;
  options.policy = KeepPolicy::kTopK;
  options.rho = 0.001;
  options.warmup_steps = 4;
  options.dense_below = 0;
  // rho_t = 0.001^((t+1)/4): t=0 -> 0.001^0.25 = 0.17783; t=3 -> 0.001.
  EXPECT_NEAR(WarmupDensity(0.001, 4, 0), std::pow(0.001, 0.25), 1e-15);
  EXPECT_DOUBLE_EQ(WarmupDensity(0.001, 4, 3), 0.001);
  EXPECT_DOUBLE_EQ(WarmupDensity(0.001, 4, 100), 0.001);
  int64_t previous = 1000000 + 1;
  for (int64_t step = 0; step < 6; ++step) {
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        KeepDecision decision,
        DecideKeepCount(StatsWithFraction(1.0), 1000000, step, options));
    EXPECT_LE(decision.k, previous);
    previous = decision.k;
  }
  EXPECT_EQ(previous, 1000);
}

TEST(DecideKeepCountTest, RejectsBudgetPolicyAndBadInput) {
  CompressionOptions options;
  options.policy = KeepPolicy::kEntropyBudget;
  EXPECT_THAT(DecideKeepCount(StatsWithFraction(0.5), 5000, 0, options),
              StatusIs(absl::StatusCode::kFailedPrecondition, "BudgetKeepCounts"));
  options.policy = KeepPolicy::kEntropy;
  EXPECT_THAT(DecideKeepCount(StatsWithFraction(0.5), 0, 0, options),
              StatusIs(absl::StatusCode::kInvalidArgument, "numel"));
  options.rho = 0.0;
  EXPECT_THAT(DecideKeepCount(StatsWithFraction(0.5), 10, 0, options),
              StatusIs(absl::StatusCode::kInvalidArgument, "rho"));
}

TEST(BudgetKeepCountsTest, SumIsWithinLayerCountOfBudget) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<BudgetLayer> layers(1 + rng() % 20);
    double total = 0;
    for (BudgetLayer& layer : layers) {
      layer.numel = 1000 + rng() % 3000000;
      layer.effective_fraction =
          std::uniform_real_distribution<double>(0.05, 1.0)(rng);
      total += layer.numel;
    }
    const double density = std::pow(10.0, -1.0 - 3.0 * (rng() % 1000) / 1000.0);
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::vector<int64_t> keep,
                                   BudgetKeepCounts(layers, density));
    const int64_t sum = std::accumulate(keep.begin(), keep.end(), int64_t{0});
    EXPECT_LE(std::abs(static_cast<double>(sum) - density * total),
              static_cast<double>(layers.size()))
        << "trial " << trial;
    for (size_t l = 0; l < layers.size(); ++l) {
      EXPECT_GE(keep[l], 1);
      EXPECT_LE(keep[l], layers[l].numel);
    }
  }
}

TEST(BudgetKeepCountsTest, SharesFollowEffectiveFraction) {
  // Equal sizes, f = 0.2 and 0.6: weights 1:3, budget 0.01 * 200000 = 2000
  // -> 500 and 1500.
  const std::vector<BudgetLayer> layers = {{100000, 0.2, false},
                                           {100000, 0.6, false}};
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::vector<int64_t> keep,
                                 BudgetKeepCounts(layers, 0.01));
  EXPECT_EQ(keep, (std::vector<int64_t>{500, 1500}));
}

TEST(BudgetKeepCountsTest, AllZeroLayersGetNothing) {
  const std::vector<BudgetLayer> layers = {{100000, 1.0 / 256, true},
                                           {100000, 0.5, false}};
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::vector<int64_t> keep,
                                 BudgetKeepCounts(layers, 0.01));
  EXPECT_EQ(keep[0], 0);
  EXPECT_EQ(keep[1], 2000);
}

TEST(BudgetKeepCountsTest, RejectsBadInput) {
  const std::vector<BudgetLayer> bad_numel = {{0, 0.5, false}};
  EXPECT_THAT(BudgetKeepCounts(bad_numel, 0.01),
              StatusIs(absl::StatusCode::kInvalidArgument, "layer 0: numel"));
  const std::vector<BudgetLayer> bad_f = {{10, 1.5, false}};
  EXPECT_THAT(BudgetKeepCounts(bad_f, 0.01),
              StatusIs(absl::StatusCode::kInvalidArgument, "effective_fraction"));
  EXPECT_THAT(BudgetKeepCounts({}, 0.0),
              StatusIs(absl::StatusCode::kInvalidArgument, "density"));
}

TEST(CompressionOptionsTest, ParsesEveryPolicyNameAndRejectsOthers) {
  for (KeepPolicy policy : {KeepPolicy::kEntropy, KeepPolicy::kEntropyBudget,
                            KeepPolicy::kTopK, KeepPolicy::kThreshold,
                            KeepPolicy::kDense}) {
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(KeepPolicy parsed,
                                   ParseKeepPolicy(KeepPolicyName(policy)));
    EXPECT_EQ(parsed, policy);
  }
  EXPECT_THAT(ParseKeepPolicy("top-k"),
              StatusIs(absl::StatusCode::kInvalidArgument, "entropy_budget"));
}

TEST(CompressionOptionsTest, ParsesEveryEntropySourceAndRejectsOthers) {
  for (EntropySource source :
       {EntropySource::kGradient, EntropySource::kAccumulated}) {
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        EntropySource parsed, ParseEntropySource(EntropySourceName(source)));
    EXPECT_EQ(parsed, source);
  }
  EXPECT_THAT(ParseEntropySource("residual"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "unknown entropy source \"residual\"; expected "
                       "gradient or accumulated"));
}

TEST(CompressionOptionsTest, ValidationNamesTheField) {
  struct Case {
    const char* field;
    void (*mutate)(CompressionOptions&);
  };
  const Case cases[] = {
      {"rho", [](CompressionOptions& o) { o.rho = 1.5; }},
      {"rho", [](CompressionOptions& o) { o.rho = std::nan(""); }},
      {"min_keep_ratio",
       [](CompressionOptions& o) { o.min_keep_ratio = -0.1; }},
      {"budget_density", [](CompressionOptions& o) { o.budget_density = 0; }},
      {"threshold", [](CompressionOptions& o) { o.threshold = -1; }},
      {"intervals", [](CompressionOptions& o) { o.intervals = 0; }},
      {"dense_below", [](CompressionOptions& o) { o.dense_below = -1; }},
      {"warmup_steps", [](CompressionOptions& o) { o.warmup_steps = -2; }},
      {"momentum", [](CompressionOptions& o) { o.momentum = 1.0; }},
      {"entropy_of",
       [](CompressionOptions& o) {
         o.entropy_of = static_cast<EntropySource>(7);
       }},
      {"share_hold_steps",
       [](CompressionOptions& o) { o.share_hold_steps = 0; }},
      {"share_hold_steps = 4 holds the entropy policy's share; policy "
       "entropy_budget takes only 1",
       [](CompressionOptions& o) {
         o.policy = KeepPolicy::kEntropyBudget;
         o.share_hold_steps = 4;
       }},
  };
  for (const Case& c : cases) {
    CompressionOptions options;
    c.mutate(options);
    EXPECT_THAT(ValidateCompressionOptions(options),
                StatusIs(absl::StatusCode::kInvalidArgument, c.field));
  }
  ENTROGRAD_EXPECT_OK(ValidateCompressionOptions(CompressionOptions{}));
}

}  // namespace
}  // namespace entrograd
