#include "workers/launcher/run_summary.h"

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "workers/launcher/launcher_test_util.h"
#include "workers/launcher/run_record.h"
#include "workers/run_format/run_summary.h"
#include "workers/run_format/worker_event.h"

namespace entrograd::launcher {
namespace {

using run_format::DoneEvent;
using run_format::EpochEvent;
using run_format::ParseRunSummaryJson;
using run_format::RunSummary;
using run_format::StartEvent;
using run_format::StepEvent;
using run_format::WireBytes;
using ::testing::HasSubstr;
using ::testing::Not;

StepEvent Step(int rank, int64_t epoch, int64_t step, double loss, int64_t up,
               int64_t down, int64_t dense) {
  StepEvent event;
  event.rank = rank;
  event.epoch = epoch;
  event.step = step;
  event.loss = loss;
  event.bytes = {up, down, dense};
  event.compress_seconds = 0.5;
  event.wait_seconds = 0.25;
  return event;
}

DoneEvent Done(int rank, const std::string& hash, int64_t up, int64_t down,
               int64_t dense, double seconds) {
  DoneEvent event;
  event.rank = rank;
  event.steps = 4;
  if (rank == 0) {
    event.test_accuracy = 0.75;
    event.test_loss = 0.6;
  }
  event.params_hash = hash;
  event.seconds = seconds;
  event.bytes = WireBytes{up, down, dense};
  return event;
}

// Two ranks, two epochs of two steps, as entrograd-worker numbers them.
RunRecord TwoRankRecord(const std::string& rank1_hash = "0123abcd") {
  RunRecord record(2);
  for (int rank = 0; rank < 2; ++rank) {
    StartEvent start;
    start.rank = rank;
    start.world_size = 2;
    start.steps_per_epoch = 2;
    start.total_steps = 4;
    start.parameters = 1000;
    start.layers = 4;
    record.Add(rank, start);
  }
  for (int64_t step = 0; step < 4; ++step) {
    for (int rank = 0; rank < 2; ++rank) {
      const int64_t n = step + 1;
      record.Add(rank, Step(rank, step / 2, step, 2.0 - 0.25 * step + rank,
                            100 * n, 300 * n, 40000 * n));
    }
    if (step % 2 == 1) {
      EpochEvent epoch;
      epoch.rank = 0;
      epoch.epoch = step / 2;
      epoch.step = step + 1;
      epoch.test_accuracy = 0.5 + 0.125 * (step / 2);
      epoch.test_loss = 1.0;
      record.Add(0, epoch);
    }
  }
  record.Add(0, Done(0, "0123abcd", 400, 1200, 160000, 3.0));
  record.Add(1, Done(1, rank1_hash, 400, 1200, 160000, 4.0));
  return record;
}

LaunchOptions Options() {
  LaunchOptions options;
  options.workers = 2;
  options.policy = "topk";
  options.rho = 0.01;
  options.epochs = 2;
  return options;
}

TEST(RunRecordTest, FollowsTheLeadAndSumsRanks) {
  RunRecord record = TwoRankRecord();
  EXPECT_EQ(record.steps_per_epoch(), 2);
  EXPECT_EQ(record.planned_epochs(), 2);
  EXPECT_EQ(record.lead_steps(), 4);
  EXPECT_EQ(record.lead_epoch_ordinal(), 2);
  EXPECT_EQ(record.lead_steps_in_epoch(), 2);
  EXPECT_DOUBLE_EQ(record.lead_loss(), 1.25);
  const std::vector<StepPoint> steps = record.Steps();
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_DOUBLE_EQ(steps[0].mean_loss, 2.5);  // (2 + 3) / 2
  EXPECT_EQ(steps[3].bytes.wire(), 2 * 1600);
  EXPECT_EQ(steps[3].bytes.dense_equivalent, 2 * 160000);
  ASSERT_EQ(record.epochs().size(), 2u);
  EXPECT_DOUBLE_EQ(record.epochs()[0].train_loss, (2.5 + 2.25) / 2);
  EXPECT_EQ(record.epochs()[1].step, 4);
  EXPECT_TRUE(record.AllDone());
}

TEST(RunRecordTest, LeavesOutStepsNotAllRanksReported) {
  RunRecord record(2);
  record.Add(0, Step(0, 0, 0, 1.0, 1, 1, 100));
  record.Add(0, Step(0, 0, 1, 1.0, 2, 2, 200));
  record.Add(1, Step(1, 0, 0, 3.0, 1, 1, 100));
  EXPECT_EQ(record.Steps().size(), 1u);
  EXPECT_EQ(record.Steps(/*include_partial=*/true).size(), 2u);
  EXPECT_FALSE(record.AllDone());
}

TEST(RunSummaryTest, TotalsAndRatio) {
  const RunSummary summary =
      SummarizeRun(Options(), "job-1", TwoRankRecord(), /*wall_seconds=*/9.0);
  EXPECT_EQ(summary.bytes.uplink, 800);
  EXPECT_EQ(summary.bytes.downlink, 2400);
  EXPECT_EQ(summary.bytes.dense_equivalent, 320000);
  EXPECT_DOUBLE_EQ(summary.compression_ratio, 100);
  EXPECT_EQ(summary.steps, 4);
  EXPECT_EQ(summary.epochs_completed, 2);
  EXPECT_EQ(summary.test_accuracy, 0.75);
  EXPECT_EQ(summary.test_loss, 0.6);
  EXPECT_DOUBLE_EQ(summary.seconds, 4.0);  // the slowest rank
  EXPECT_DOUBLE_EQ(summary.seconds_per_step, 1.0);
  EXPECT_DOUBLE_EQ(summary.compress_seconds, 4.0);  // 4 steps x 2 ranks
  EXPECT_DOUBLE_EQ(summary.wait_seconds, 2.0);
  EXPECT_TRUE(summary.replicas_identical);
  EXPECT_EQ(summary.parameters, 1000);
}

TEST(RunSummaryTest, DifferentHashesAreNotIdentical) {
  EXPECT_FALSE(SummarizeRun(Options(), "j", TwoRankRecord("ffff0000"), 1)
                   .replicas_identical);
  // A rank that never finished cannot be vouched for either.
  RunRecord partial(2);
  partial.Add(0, Done(0, "0123abcd", 1, 1, 100, 1));
  EXPECT_FALSE(SummarizeRun(Options(), "j", partial, 1).replicas_identical);
}

TEST(RunSummaryTest, WrittenJsonReadsBackAsTheSummary) {
  testing::TempDir dir;
  const RunRecord record = TwoRankRecord();
  const RunSummary summary = SummarizeRun(Options(), "job-1", record, 9.0);
  ENTROGRAD_ASSERT_OK(WriteRunResults(dir.path(), summary, record));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      RunSummary json,
      ParseRunSummaryJson(testing::ReadFileOrEmpty(dir.File("summary.json"))));
  EXPECT_EQ(json.job_id, "job-1");
  EXPECT_EQ(json.policy, "topk");
  EXPECT_EQ(json.workers, 2);
  EXPECT_EQ(json.steps, 4);
  EXPECT_EQ(json.epochs, 2);
  EXPECT_EQ(json.rho, 0.01);
  EXPECT_EQ(json.threshold, Options().threshold);
  EXPECT_EQ(json.test_accuracy, 0.75);
  EXPECT_EQ(json.test_loss, 0.6);
  EXPECT_EQ(json.bytes.uplink, 800);
  EXPECT_EQ(json.bytes.downlink, 2400);
  EXPECT_EQ(json.bytes.dense_equivalent, 320000);
  EXPECT_EQ(json.compression_ratio, 100);
  EXPECT_EQ(json.seconds, 4);
  EXPECT_EQ(json.seconds_per_step, 1);
  EXPECT_TRUE(json.replicas_identical);
  EXPECT_EQ(json.params_hash, "0123abcd");
  EXPECT_EQ(json.breakdown.samples, 8);
}

TEST(RunSummaryTest, MissingAccuracyIsAbsent) {
  RunRecord record(1);
  const RunSummary summary = SummarizeRun(Options(), "j", record, 1);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      RunSummary json,
      ParseRunSummaryJson(run_format::FormatRunSummaryJson(summary)));
  EXPECT_FALSE(json.test_accuracy.has_value());
  EXPECT_EQ(json.compression_ratio, 0);
}

TEST(RunSummaryTest, ThresholdPolicyShowsItsThresholdNotRho) {
  LaunchOptions options = Options();
  options.policy = "threshold";
  options.threshold = 0.025;
  const RunSummary summary = SummarizeRun(options, "j", TwoRankRecord(), 1);
  EXPECT_EQ(summary.threshold, 0.025);
  const std::string md = SummaryMarkdown(summary);
  EXPECT_THAT(md, HasSubstr("Policy `threshold` (threshold 0.025) on 2"));
  EXPECT_THAT(md, HasSubstr("| threshold | 0.025 |\n"));
}

TEST(RunSummaryTest, MarkdownIsATableWithAHeader) {
  const std::string md =
      SummaryMarkdown(SummarizeRun(Options(), "job-1", TwoRankRecord(), 9.0));
  EXPECT_THAT(md, ::testing::StartsWith("# entrograd run job-1\n\n"));
  EXPECT_THAT(md, HasSubstr("| metric | value |\n| --- | --- |\n"));
  EXPECT_THAT(md, HasSubstr("| policy | topk |\n"));
  EXPECT_THAT(md, HasSubstr("| compression ratio | 100x |\n"));
  EXPECT_THAT(md, HasSubstr("| test accuracy | 75.00% |\n"));
  EXPECT_THAT(md, HasSubstr("| uplink wire bytes | 800 (800 B) |\n"));
  EXPECT_THAT(md, HasSubstr("| dense-equivalent bytes | 320,000 (320 kB) |\n"));
  EXPECT_THAT(md, HasSubstr("| replicas identical | yes |\n"));
  // Every table row has exactly two cells.
  size_t rows = 0;
  for (size_t at = md.find("\n| "); at != std::string::npos;
       at = md.find("\n| ", at + 1)) {
    const size_t end = md.find('\n', at + 1);
    const std::string row = md.substr(at + 1, end - at - 1);
    EXPECT_EQ(std::count(row.begin(), row.end(), '|'), 3) << row;
    ++rows;
  }
  EXPECT_GE(rows, 15u);
}

TEST(RunSummaryTest, LayerSharesAverageTheSentShareOverRanks) {
  RunRecord record = TwoRankRecord();
  // Replace each rank's done event with one carrying its layer shares.
  RunRecord with_shares(2);
  for (int rank = 0; rank < 2; ++rank) {
    DoneEvent done = *record.done(rank);
    done.layer_shares = {{"fc.weight", 5000, rank == 0 ? 0.001 : 0.003, 0.0035},
                         {"fc.bias", 20, 1.0, 1.0}};
    with_shares.Add(rank, done);
  }
  const RunSummary summary = SummarizeRun(Options(), "j", with_shares, 1);
  ASSERT_EQ(summary.layer_shares.size(), 2u);
  EXPECT_EQ(summary.layer_shares[0].name, "fc.weight");
  EXPECT_EQ(summary.layer_shares[0].numel, 5000);
  EXPECT_DOUBLE_EQ(summary.layer_shares[0].sent_share, 0.002);
  EXPECT_DOUBLE_EQ(summary.layer_shares[0].merged_share, 0.0035);
  EXPECT_DOUBLE_EQ(summary.layer_shares[1].sent_share, 1.0);
  const std::string md = SummaryMarkdown(summary);
  EXPECT_THAT(md, HasSubstr("| layer | elements | sent | applied |\n"));
  EXPECT_THAT(md, HasSubstr("| `fc.weight` | 5,000 | 0.2% | 0.35% |\n"));
  EXPECT_THAT(md, HasSubstr("| `fc.bias` | 20 | 100% | 100% |\n"));
  // Without them (TwoRankRecord's workers did not say) there is no table.
  EXPECT_THAT(SummaryMarkdown(SummarizeRun(Options(), "j", record, 1)),
              Not(HasSubstr("| layer |")));
}

TEST(RunSummaryTest, WritesTheThreeFiles) {
  testing::TempDir dir;
  const RunRecord record = TwoRankRecord();
  ENTROGRAD_ASSERT_OK(WriteRunResults(
      dir.path(), SummarizeRun(Options(), "j", record, 1), record));
  for (const char* name : {"summary.json", "summary.md", "plot.svg"}) {
    EXPECT_FALSE(testing::ReadFileOrEmpty(dir.File(name)).empty()) << name;
  }
  EXPECT_THAT(WriteRunResults(dir.File("missing/dir"),
                              SummarizeRun(Options(), "j", record, 1), record),
              ::entrograd::testing::StatusIs(absl::StatusCode::kInternal,
                                             "summary.json"));
}

}  // namespace
}  // namespace entrograd::launcher
