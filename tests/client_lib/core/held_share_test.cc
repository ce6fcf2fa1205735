#include "entrograd/held_share.h"

#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd {
namespace {

using ::entrograd::testing::StatusIs;

EntropyStats Measured(double f, bool all_zero = false) {
  EntropyStats stats;
  stats.intervals = 256;
  stats.effective_fraction = f;
  stats.entropy = 1.25;  // reported as measured, never held
  stats.all_zero = all_zero;
  return stats;
}

// Runs the hold over `fractions` (one per step from 0) and returns the
// fraction the policy saw at each step.
std::vector<double> FractionsSeen(const std::vector<double>& fractions,
                                  int64_t hold_steps) {
  HeldShare held;
  std::vector<double> seen;
  for (size_t step = 0; step < fractions.size(); ++step) {
    const EntropyStats used =
        EntropyForPolicy(Measured(fractions[step], fractions[step] == 0.0),
                         held, static_cast<int64_t>(step), hold_steps);
    seen.push_back(used.all_zero ? 0.0 : used.effective_fraction);
    held = HeldShareAfter(used, held, static_cast<int64_t>(step), hold_steps);
  }
  return seen;
}

TEST(HeldShareTest, EveryStepWithoutAHold) {
  const std::vector<double> fractions = {0.5, 0.25, 0.75, 0.4};
  EXPECT_EQ(FractionsSeen(fractions, 1), fractions);
}

TEST(HeldShareTest, TheWindowsFirstStepIsHeldForTheWindow) {
  // Windows of 3: steps 0-2, 3-5, 6.
  EXPECT_EQ(FractionsSeen({0.5, 0.25, 0.75, 0.4, 0.9, 0.1, 0.3}, 3),
            (std::vector<double>{0.5, 0.5, 0.5, 0.4, 0.4, 0.4, 0.3}));
}

TEST(HeldShareTest, AnAllZeroStepSendsNothingAndTakesNoShare) {
  // Windows of 2. Step 0 is all zero: it sends nothing and holds nothing,
  // so step 1 takes its own share. Step 2 (window 1) is all zero too, and
  // step 3 takes window 1's share. Step 5 is all zero inside window 2: it
  // sends nothing and leaves step 4's share held.
  EXPECT_EQ(FractionsSeen({0.0, 0.25, 0.0, 0.6, 0.7, 0.0, 0.9}, 2),
            (std::vector<double>{0.0, 0.25, 0.0, 0.6, 0.7, 0.0, 0.9}));
  // An all-zero step inside a window: the share stays held past it.
  EXPECT_EQ(FractionsSeen({0.5, 0.0, 0.25, 0.6}, 4),
            (std::vector<double>{0.5, 0.0, 0.5, 0.5}));
}

TEST(HeldShareTest, OnlyTheFractionIsHeld) {
  const HeldShare held{0, 0.5};
  const EntropyStats used = EntropyForPolicy(Measured(0.25), held, 1, 4);
  EXPECT_EQ(used.effective_fraction, 0.5);
  EXPECT_EQ(used.entropy, 1.25);
  EXPECT_EQ(used.intervals, 256);
}

TEST(HeldShareTest, AResumedHoldContinuesItsWindow) {
  // What a checkpoint restores at step 5 (window 1 of 4 steps) is used
  // until step 8 starts window 2.
  HeldShare held{1, 0.125};
  for (int64_t step = 5; step < 8; ++step) {
    const EntropyStats used = EntropyForPolicy(Measured(0.9), held, step, 4);
    EXPECT_EQ(used.effective_fraction, 0.125) << "step " << step;
    held = HeldShareAfter(used, held, step, 4);
  }
  EXPECT_EQ(EntropyForPolicy(Measured(0.9), held, 8, 4).effective_fraction,
            0.9);
}

TEST(HeldShareTest, ValidationNamesTheField) {
  ENTROGRAD_EXPECT_OK(ValidateHeldShare(HeldShare{}));
  ENTROGRAD_EXPECT_OK(ValidateHeldShare(HeldShare{3, 1.0}));
  EXPECT_THAT(ValidateHeldShare(HeldShare{-2, 0.5}),
              StatusIs(absl::StatusCode::kInvalidArgument, "window = -2"));
  EXPECT_THAT(ValidateHeldShare(HeldShare{0, 0.0}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "effective_fraction = 0"));
  EXPECT_THAT(ValidateHeldShare(HeldShare{0, 1.5}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "effective_fraction = 1.5"));
}

}  // namespace
}  // namespace entrograd
