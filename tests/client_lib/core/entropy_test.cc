#include "entrograd/entropy.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd {
namespace {

using ::entrograd::testing::StatusIs;

TEST(IntervalBeginTest, IntervalsCoverEverythingAndDifferByAtMostOne) {
  for (int64_t n : {1, 2, 7, 255, 256, 257, 1000, 4097}) {
    for (int64_t m_max : {1, 3, 256}) {
      const int64_t m = std::min(n, m_max);
      EXPECT_EQ(IntervalBegin(0, n, m), 0);
      EXPECT_EQ(IntervalBegin(m, n, m), n);
      int64_t shortest = n, longest = 0;
      for (int64_t i = 0; i < m; ++i) {
        const int64_t length = IntervalBegin(i + 1, n, m) - IntervalBegin(i, n, m);
        shortest = std::min(shortest, length);
        longest = std::max(longest, length);
      }
      EXPECT_GE(shortest, 1) << "n=" << n << " m=" << m;
      EXPECT_LE(longest - shortest, 1) << "n=" << n << " m=" << m;
    }
  }
}

TEST(IntervalBeginTest, NoOverflowAtLargestLayer) {
  const int64_t n = 0xFFFFFFFFll;
  EXPECT_EQ(IntervalBegin(256, n, 256), n);
  EXPECT_EQ(IntervalBegin(128, n, 256), n / 2);  // floor(128 n / 256)
}

TEST(EntropyTest, UniformMagnitudeHasNormalizedEntropyOne) {
  // Signs alternate: the entropy depends on |u| only.
  std::vector<float> gradient(1000);
  for (size_t i = 0; i < gradient.size(); ++i) gradient[i] = i % 2 ? 0.5f : -0.5f;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(EntropyStats stats,
                                 ComputeIntervalEntropy(gradient, 256));
  EXPECT_EQ(stats.intervals, 256);
  EXPECT_NEAR(stats.normalized_entropy, 1.0, 1e-12);
  EXPECT_NEAR(stats.entropy, std::log(256.0), 1e-12);
  EXPECT_NEAR(stats.effective_fraction, 1.0, 1e-12);
  EXPECT_FALSE(stats.all_zero);
}

TEST(EntropyTest, UniformMeansWithUnequalIntervalLengthsStillGiveOne) {
  // n = 10, m = 4: lengths 2, 3, 2, 3. Sums differ but means are equal, so
  // P is uniform: this pins that h_i are means, not sums.
  std::vector<float> gradient(10, 2.0f);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(EntropyStats stats,
                                 ComputeIntervalEntropy(gradient, 4));
  EXPECT_NEAR(stats.entropy, std::log(4.0), 1e-12);
}

TEST(EntropyTest, MassInOneIntervalHasZeroEntropy) {
  std::vector<float> gradient(512, 0.0f);
  gradient[300] = 3.0f;
  gradient[301] = -1.0f;  // same interval (2 elements per interval)
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(EntropyStats stats,
                                 ComputeIntervalEntropy(gradient, 256));
  EXPECT_EQ(stats.entropy, 0.0);
  EXPECT_EQ(stats.normalized_entropy, 0.0);
  EXPECT_DOUBLE_EQ(stats.effective_fraction, 1.0 / 256.0);
}

TEST(EntropyTest, AllZeroLayerIsFlagged) {
  std::vector<float> gradient(300, 0.0f);
  gradient[7] = -0.0f;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(EntropyStats stats,
                                 ComputeIntervalEntropy(gradient, 256));
  EXPECT_TRUE(stats.all_zero);
  EXPECT_EQ(stats.entropy, 0.0);
}

TEST(EntropyTest, HandComputedSmallVector) {
  // u = [1, -1, 2, 0, 0, 4], M = 3: intervals [0,2), [2,4), [4,6).
  // h = (|1| + |-1|) / 2 = 1, (2 + 0) / 2 = 1, (0 + 4) / 2 = 2; sum h = 4.
  // P = 1/4, 1/4, 1/2.
  // H = -(1/4 ln 1/4 + 1/4 ln 1/4 + 1/2 ln 1/2) = (1/2) ln 4 + (1/2) ln 2
  //   = ln 2 + (1/2) ln 2 = 1.5 ln 2 = 1.0397207708399179 nats.
  // Hn = 1.5 ln 2 / ln 3; f = exp(1.5 ln 2) / 3 = 2^1.5 / 3 = 0.9428090415820634.
  const std::vector<float> gradient = {1, -1, 2, 0, 0, 4};
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(EntropyStats stats,
                                 ComputeIntervalEntropy(gradient, 3));
  EXPECT_EQ(stats.intervals, 3);
  EXPECT_NEAR(stats.entropy, 1.0397207708399179, 1e-15);
  EXPECT_NEAR(stats.normalized_entropy, 1.5 * std::log(2.0) / std::log(3.0),
              1e-15);
  EXPECT_NEAR(stats.effective_fraction, 0.9428090415820634, 1e-15);
}

TEST(EntropyTest, SingleElementUsesOneIntervalWithNormalizedEntropyOne) {
  const std::vector<float> gradient = {0.25f};
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(EntropyStats stats,
                                 ComputeIntervalEntropy(gradient, 256));
  EXPECT_EQ(stats.intervals, 1);
  EXPECT_EQ(stats.entropy, 0.0);
  EXPECT_EQ(stats.normalized_entropy, 1.0);
  EXPECT_EQ(stats.effective_fraction, 1.0);
}

TEST(EntropyTest, EntropyStaysInRangeForRandomInputs) {
  std::mt19937 rng(7);
  std::cauchy_distribution<float> heavy(0.0f, 1e-3f);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<float> gradient(1 + rng() % 5000);
    for (float& x : gradient) x = heavy(rng);
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(EntropyStats stats,
                                   ComputeIntervalEntropy(gradient, 256));
    EXPECT_GE(stats.entropy, 0.0);
    EXPECT_LE(stats.entropy, std::log(static_cast<double>(stats.intervals)));
    EXPECT_GE(stats.effective_fraction, 1.0 / stats.intervals - 1e-15);
    EXPECT_LE(stats.effective_fraction, 1.0);
  }
}

TEST(EntropyTest, RejectsBadInput) {
  EXPECT_THAT(ComputeIntervalEntropy({}, 256),
              StatusIs(absl::StatusCode::kInvalidArgument, "empty"));
  const std::vector<float> ok = {1.0f};
  EXPECT_THAT(ComputeIntervalEntropy(ok, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, "max_intervals"));
  std::vector<float> with_nan(100, 1.0f);
  with_nan[42] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THAT(ComputeIntervalEntropy(with_nan, 8),
              StatusIs(absl::StatusCode::kInvalidArgument, "element 42"));
  std::vector<float> with_inf(100, 1.0f);
  with_inf[99] = -std::numeric_limits<float>::infinity();
  EXPECT_THAT(ComputeIntervalEntropy(with_inf, 8),
              StatusIs(absl::StatusCode::kInvalidArgument, "element 99"));
}

}  // namespace
}  // namespace entrograd
