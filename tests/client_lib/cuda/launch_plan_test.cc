// The parts of the CUDA path that run without a GPU: the launch plan of the
// accumulate pass (its partial-sum scratch must hold every layer a
// workspace accepts) and argument checking and error reporting when there
// is no device. These run in CI; the kernels themselves are covered by
// device_compressor_test on a GPU.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "entrograd/cuda/device_compressor.h"
#include "cuda/kernels.h"
#include "entrograd/entropy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd {
namespace cuda {
namespace {

using internal::kAccumulateTile;
using internal::MaxIntervalPartials;
using internal::TilesPerInterval;
using ::entrograd::testing::StatusIs;

// Layer sizes around the tile and interval boundaries, up to the largest
// layer a uint32 index can address.
std::vector<int64_t> SizesUpTo(int64_t max_numel) {
  std::vector<int64_t> sizes = {1, 2, 3, 255, 256, 257, 1000};
  for (int64_t base : {kAccumulateTile, 256 * kAccumulateTile,
                       int64_t{1} << 26, int64_t{400'000'000},
                       int64_t{0xFFFFFFFF}}) {
    for (int64_t delta : {-1, 0, 1}) sizes.push_back(base + delta);
  }
  std::vector<int64_t> kept;
  for (int64_t n : sizes) {
    if (n >= 1 && n <= max_numel) kept.push_back(n);
  }
  return kept;
}

TEST(LaunchPlanTest, PartialScratchHoldsEveryAcceptedLayer) {
  for (int64_t max_numel : {int64_t{1}, int64_t{1000}, int64_t{1} << 26,
                            int64_t{0xFFFFFFFF}}) {
    for (int64_t max_intervals : {int64_t{1}, int64_t{2}, int64_t{256},
                                  int64_t{1000}, int64_t{65536}, max_numel}) {
      const int64_t capacity = MaxIntervalPartials(max_numel, max_intervals);
      for (int64_t n : SizesUpTo(max_numel)) {
        for (int64_t intervals : {int64_t{1}, max_intervals / 2 + 1,
                                  max_intervals}) {
          const int64_t m = std::min(intervals, n);
          EXPECT_LE(m * TilesPerInterval(n, m), capacity)
              << "n=" << n << " m=" << m << " max_numel=" << max_numel
              << " max_intervals=" << max_intervals;
        }
      }
    }
  }
}

TEST(LaunchPlanTest, TilesCoverTheLongestInterval) {
  for (int64_t n : SizesUpTo(int64_t{0xFFFFFFFF})) {
    for (int64_t intervals : {int64_t{1}, int64_t{7}, int64_t{256},
                              int64_t{100000}}) {
      const int64_t m = std::min(intervals, n);
      int64_t longest = 0;
      // Interval lengths differ by at most one: the first and the last two
      // include both lengths.
      for (int64_t i : {int64_t{0}, m / 2, m - 1}) {
        longest = std::max(longest,
                           IntervalBegin(i + 1, n, m) - IntervalBegin(i, n, m));
      }
      const int64_t tiles = TilesPerInterval(n, m);
      EXPECT_GE(tiles * kAccumulateTile, longest) << "n=" << n << " m=" << m;
      // And no tile is wholly wasted.
      EXPECT_LT((tiles - 1) * kAccumulateTile, longest)
          << "n=" << n << " m=" << m;
    }
  }
}

TEST(LaunchPlanTest, GradientTypeSizes) {
  EXPECT_EQ(GradientTypeSize(GradientType::kFloat32), 4);
  EXPECT_EQ(GradientTypeSize(GradientType::kFloat16), 2);
  EXPECT_EQ(GradientTypeSize(GradientType::kBFloat16), 2);
}

// Bad arguments are named before any device is touched.
TEST(NoDeviceTest, BadArgumentsAreRejectedFirst) {
  CompressionOptions options;
  EXPECT_THAT(DeviceLayerCompressor::Create(0, options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "numel = 0"));
  EXPECT_THAT(
      DeviceLayerCompressor::Create(int64_t{1} << 32, options).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, "numel"));
  options.rho = 0.0;
  EXPECT_THAT(DeviceLayerCompressor::Create(100, options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "rho"));
  EXPECT_THAT(DeviceWorkspace::Create(0, 256).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "max_numel = 0"));
  EXPECT_THAT(DeviceWorkspace::Create(100, 0).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "max_intervals = 0"));
}

TEST(NoDeviceTest, WithoutADeviceEveryEntryPointSaysWhy) {
  const absl::Status available = CheckCudaDeviceAvailable();
  if (available.ok()) {
    GTEST_SKIP() << "a CUDA device is present; this test covers machines "
                    "without one";
  }
  EXPECT_EQ(available.code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(available.message().empty());
  EXPECT_THAT(DeviceWorkspace::Create(1000, 256).status(),
              StatusIs(absl::StatusCode::kUnavailable, ""));
  EXPECT_THAT(DeviceLayerCompressor::Create(1000, CompressionOptions()).status(),
              StatusIs(absl::StatusCode::kUnavailable, ""));
}

}  // namespace
}  // namespace cuda
}  // namespace entrograd
