#include "entrograd/select.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "client_lib/core/reference.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd {
namespace {

using ::entrograd::testing::StatusIs;
using reference::kAllShapes;
using reference::MakeValues;
using reference::SelectBySort;

TEST(SelectLargestMagnitudeTest, MatchesSortReferenceOverSeedsSizesAndShapes) {
  SelectScratch scratch;  // reused: stale contents must not leak into results
  std::mt19937 rng(2024);
  const int64_t sizes[] = {1, 2, 3, 7, 255, 256, 257, 1000, 4099, 65537};
  for (int64_t n : sizes) {
    for (reference::Shape shape : kAllShapes) {
      for (uint32_t seed = 0; seed < 3; ++seed) {
        const std::vector<float> values = MakeValues(shape, n, seed * 31 + n);
        const int64_t ks[] = {0, 1, n / 1000, n / 100, n / 2, n - 1, n,
                              static_cast<int64_t>(rng() % (n + 1))};
        for (int64_t k : ks) {
          if (k < 0) continue;
          std::vector<uint32_t> fast;
          ENTROGRAD_ASSERT_OK(SelectLargestMagnitude(values, k, &fast, &scratch));
          ASSERT_EQ(fast, SelectBySort(values, k))
              << "n=" << n << " k=" << k << " shape=" << static_cast<int>(shape)
              << " seed=" << seed;
        }
      }
    }
  }
}

TEST(SelectLargestMagnitudeTest, TiesGoToTheSmallerIndex) {
  const std::vector<float> values = {1.0f, -2.0f, 2.0f, 0.5f, -2.0f, 2.0f};
  std::vector<uint32_t> selected;
  ENTROGRAD_ASSERT_OK(SelectLargestMagnitude(values, 2, &selected));
  EXPECT_EQ(selected, (std::vector<uint32_t>{1, 2}));
  ENTROGRAD_ASSERT_OK(SelectLargestMagnitude(values, 3, &selected));
  EXPECT_EQ(selected, (std::vector<uint32_t>{1, 2, 4}));
}

TEST(SelectLargestMagnitudeTest, NegativeZeroEqualsPositiveZero) {
  const std::vector<float> values = {0.0f, -0.0f, 0.0f, -0.0f};
  std::vector<uint32_t> selected;
  ENTROGRAD_ASSERT_OK(SelectLargestMagnitude(values, 2, &selected));
  EXPECT_EQ(selected, (std::vector<uint32_t>{0, 1}));
}

TEST(SelectLargestMagnitudeTest, RejectsBadKAndNonFiniteWithoutTouchingOutput) {
  const std::vector<float> values = {1, 2, 3};
  std::vector<uint32_t> selected = {99};
  EXPECT_THAT(SelectLargestMagnitude(values, 4, &selected),
              StatusIs(absl::StatusCode::kInvalidArgument, "k = 4"));
  EXPECT_THAT(SelectLargestMagnitude(values, -1, &selected),
              StatusIs(absl::StatusCode::kInvalidArgument, "k = -1"));
  std::vector<float> with_nan = {1, std::numeric_limits<float>::quiet_NaN(), 3};
  EXPECT_THAT(SelectLargestMagnitude(with_nan, 1, &selected),
              StatusIs(absl::StatusCode::kInvalidArgument, "element 1"));
  std::vector<float> with_inf = {1, 2, std::numeric_limits<float>::infinity()};
  EXPECT_THAT(SelectLargestMagnitude(with_inf, 0, &selected),
              StatusIs(absl::StatusCode::kInvalidArgument, "element 2"));
  EXPECT_EQ(selected, (std::vector<uint32_t>{99}));
}

TEST(SelectLargestMagnitudeTest, FindsNonFiniteOnEveryPath) {
  // Small k takes the sampled-candidate path, large k the histogram path,
  // k = 0 and k = n the trivial ones: each must report the first NaN/Inf.
  std::vector<float> values = MakeValues(reference::Shape::kGaussian, 100000, 3);
  values[70000] = std::numeric_limits<float>::infinity();
  values[80000] = std::numeric_limits<float>::quiet_NaN();
  for (int64_t k : {0, 1, 10, 1000, 60000, 99999, 100000}) {
    std::vector<uint32_t> selected;
    EXPECT_THAT(SelectLargestMagnitude(values, k, &selected),
                StatusIs(absl::StatusCode::kInvalidArgument, "element 70000"))
        << "k=" << k;
  }
}

TEST(SelectAtLeastMagnitudeTest, MatchesAFilter) {
  for (reference::Shape shape : kAllShapes) {
    const std::vector<float> values = MakeValues(shape, 5000, 5);
    for (float threshold : {0.0f, 1e-30f, 1e-4f, 0.5f, 2.0f}) {
      std::vector<uint32_t> expected;
      for (size_t i = 0; i < values.size(); ++i) {
        if (std::fabs(values[i]) >= threshold) expected.push_back(i);
      }
      std::vector<uint32_t> selected;
      ENTROGRAD_ASSERT_OK(SelectAtLeastMagnitude(values, threshold, &selected));
      EXPECT_EQ(selected, expected);
    }
  }
}

TEST(SelectAtLeastMagnitudeTest, RejectsBadThresholdAndNonFinite) {
  const std::vector<float> values = {1, 2};
  std::vector<uint32_t> selected;
  EXPECT_THAT(SelectAtLeastMagnitude(values, -1.0f, &selected),
              StatusIs(absl::StatusCode::kInvalidArgument, "threshold"));
  EXPECT_THAT(SelectAtLeastMagnitude(values, std::nanf(""), &selected),
              StatusIs(absl::StatusCode::kInvalidArgument, "threshold"));
  const std::vector<float> with_nan = {std::nanf(""), 2};
  EXPECT_THAT(SelectAtLeastMagnitude(with_nan, 0.5f, &selected),
              StatusIs(absl::StatusCode::kInvalidArgument, "element 0"));
}

}  // namespace
}  // namespace entrograd
