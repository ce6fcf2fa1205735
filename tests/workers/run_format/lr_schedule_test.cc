#include "workers/run_format/lr_schedule.h"

#include <cstdint>

#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd {
namespace {

using ::entrograd::testing::StatusIs;

TEST(LrScheduleTest, NamesRoundTripAndUnknownOnesAreNamed) {
  for (LrSchedule schedule : {LrSchedule::kConstant, LrSchedule::kCosine}) {
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(LrSchedule back,
                                   ParseLrSchedule(LrScheduleName(schedule)));
    EXPECT_EQ(back, schedule);
  }
  EXPECT_THAT(ParseLrSchedule("Cosine"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "\"Cosine\"; expected constant or cosine"));
}

TEST(LrScheduleTest, ConstantIsTheBaseRateThroughout) {
  for (int64_t step : {0, 1, 499, 999}) {
    EXPECT_EQ(LearningRateAt(LrSchedule::kConstant, 0.03, step, 1000), 0.03);
  }
}

TEST(LrScheduleTest, CosineStartsAtTheBaseHalvesMidwayAndStaysAboveZero) {
  constexpr int64_t kTotal = 1926;  // 9 epochs of 214 steps
  EXPECT_EQ(LearningRateAt(LrSchedule::kCosine, 0.03, 0, kTotal), 0.03);
  EXPECT_NEAR(LearningRateAt(LrSchedule::kCosine, 0.03, kTotal / 2, kTotal),
              0.015, 1e-12);
  // A quarter of the way: 0.5 * (1 + cos(pi / 4)) of the base.
  EXPECT_NEAR(LearningRateAt(LrSchedule::kCosine, 0.04, 250, 1000),
              0.04 * 0.5 * (1 + 0.70710678118654752), 1e-12);
  const double last = LearningRateAt(LrSchedule::kCosine, 0.03, kTotal - 1, kTotal);
  EXPECT_GT(last, 0.0);
  EXPECT_LT(last, 0.03 * 1e-5);
  // Falls at every step.
  double previous = LearningRateAt(LrSchedule::kCosine, 0.03, 0, kTotal);
  for (int64_t step = 1; step < kTotal; ++step) {
    const double rate = LearningRateAt(LrSchedule::kCosine, 0.03, step, kTotal);
    ASSERT_LT(rate, previous) << "step " << step;
    previous = rate;
  }
}

}  // namespace
}  // namespace entrograd
