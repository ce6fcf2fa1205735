#include "workers/launcher/progress_display.h"

#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "workers/launcher/format_units.h"

namespace entrograd::launcher {
namespace {

using ::testing::HasSubstr;

ProgressSnapshot At(int64_t epoch_step, int64_t epoch_steps) {
  ProgressSnapshot snapshot;
  snapshot.epoch = 1;
  snapshot.epochs = 2;
  snapshot.epoch_steps_done = epoch_step;
  snapshot.epoch_steps = epoch_steps;
  snapshot.steps_done = epoch_step;
  snapshot.total_steps = 2 * epoch_steps;
  snapshot.loss = 0.41234;
  snapshot.ratio = 93.44;
  return snapshot;
}

TEST(ProgressDisplayTest, PlainModePrintsTenthsWithoutEscapeCodes) {
  std::ostringstream out;
  std::ostringstream err;
  ProgressDisplay display(out, err, /*interactive=*/false);
  for (int step = 1; step <= 100; ++step) display.Update(At(step, 100));
  const std::string text = out.str();
  EXPECT_EQ(text.find('\033'), std::string::npos);
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 10);
  EXPECT_THAT(text,
              HasSubstr("epoch 1/2 step 10/100  loss 0.4123  ratio 93.4x\n"));
  EXPECT_THAT(text, HasSubstr("step 100/100"));
}

TEST(ProgressDisplayTest, InteractiveModeRedrawsOneLine) {
  std::ostringstream out;
  std::ostringstream err;
  ProgressDisplay display(out, err, /*interactive=*/true);
  display.Update(At(50, 100));
  EXPECT_THAT(out.str(), HasSubstr("\r\033[K"));
  EXPECT_THAT(out.str(), HasSubstr("[============>           ] 50/100"));
  EXPECT_EQ(out.str().find('\n'), std::string::npos);
  display.Error("rank 1 failed");
  EXPECT_EQ(err.str(), "rank 1 failed\n");
}

TEST(ProgressDisplayTest, StatusLineShowsSpeedAndEta) {
  ProgressSnapshot snapshot = At(50, 100);
  snapshot.steps_per_second = 10;
  EXPECT_EQ(ProgressDisplay::StatusLine(snapshot, /*with_bar=*/false),
            "epoch 1/2 step 50/100  loss 0.4123  ratio 93.4x  10.0 step/s  "
            "ETA 15.0s");
}

// Epoch 1 of 3 without an evaluation.
EpochReport FirstOfThreeEpochs() {
  EpochReport report;
  report.epoch = 1;
  report.epochs = 3;
  report.train_loss = 0.5;
  report.ratio = 120;
  report.wire_bytes = 12.3e6;
  return report;
}

TEST(ProgressDisplayTest, EpochLine) {
  EpochReport report = FirstOfThreeEpochs();
  report.test_accuracy = 0.8512;
  report.test_loss = 0.45;
  EXPECT_EQ(ProgressDisplay::EpochLine(report),
            "epoch 1/3 done: train loss 0.5  test loss 0.45  test accuracy "
            "85.12%  ratio 120x (12.3 MB on the wire)");
}

TEST(ProgressDisplayTest, EpochLineWithoutAnEvaluation) {
  EXPECT_EQ(ProgressDisplay::EpochLine(FirstOfThreeEpochs()),
            "epoch 1/3 done: train loss 0.5  ratio 120x (12.3 MB on the "
            "wire)");
}

TEST(FormatUnitsTest, Units) {
  EXPECT_EQ(FormatBytes(950), "950 B");
  EXPECT_EQ(FormatBytes(12345), "12.3 kB");
  EXPECT_EQ(FormatBytes(4.56e9), "4.56 GB");
  EXPECT_EQ(FormatCount(12345678), "12,345,678");
  EXPECT_EQ(FormatCount(-1000), "-1,000");
  EXPECT_EQ(FormatCount(12), "12");
  EXPECT_EQ(FormatRatio(0), "-");
  EXPECT_EQ(FormatRatio(1.016), "1.02x");
  EXPECT_EQ(FormatRatio(1234.4), "1234x");
  EXPECT_EQ(FormatSeconds(0.00228), "2.28ms");
  EXPECT_EQ(FormatSeconds(4.2), "4.20s");
  EXPECT_EQ(FormatSeconds(245), "4m05s");
  EXPECT_EQ(FormatSeconds(3720), "1h02m");
  EXPECT_EQ(FormatLoss(NAN), "nan");
}

}  // namespace
}  // namespace entrograd::launcher
