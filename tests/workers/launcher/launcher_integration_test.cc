// The success path, end to end: entrograd-launch with the real aggregator
// and the real Fashion-MNIST worker. Skipped while entrograd-worker is not
// built (it needs LibTorch).
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "workers/launcher/launcher_test_util.h"
#include "workers/run_format/run_summary.h"

namespace entrograd::launcher::testing {
namespace {

using run_format::ParseRunSummaryJson;
using run_format::RunSummary;
using ::testing::HasSubstr;
using ::testing::Not;

// Every test here runs the real worker, which needs LibTorch.
class LauncherIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(WorkerPath())) {
      GTEST_SKIP() << "entrograd-worker not built (" << WorkerPath() << ")";
    }
  }
};

TEST_F(LauncherIntegrationTest, TwoWorkersTwentyStepsSucceed) {
  TempDir dir;
  const std::string out = dir.File("run");
  // The worker and aggregator binaries are the defaults: found beside the
  // launcher in this build tree.
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto launcher, StartLauncher({"--workers", "2", "--max_steps",
                                             "20", "--out", out}));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(int status, launcher->Wait(absl::Minutes(8)));
  ASSERT_TRUE(WIFEXITED(status)) << launcher->Output();
  ASSERT_EQ(WEXITSTATUS(status), 0) << launcher->Output();
  EXPECT_THAT(launcher->out(), HasSubstr("results in"));

  const std::string text = ReadFileOrEmpty(out + "/summary.json");
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(RunSummary summary, ParseRunSummaryJson(text));
  EXPECT_EQ(summary.policy, "entropy");
  EXPECT_EQ(summary.workers, 2);
  EXPECT_EQ(summary.steps, 20);
  EXPECT_TRUE(summary.replicas_identical) << text;
  EXPECT_GT(summary.compression_ratio, 10) << text;
  ASSERT_TRUE(summary.test_accuracy.has_value()) << text;
  EXPECT_GT(*summary.test_accuracy, 0) << text;
  EXPECT_TRUE(summary.test_loss.has_value()) << text;
  EXPECT_GT(summary.bytes.uplink, 0) << text;

  EXPECT_THAT(ReadFileOrEmpty(out + "/summary.md"), HasSubstr("| policy |"));
  EXPECT_THAT(ReadFileOrEmpty(out + "/plot.svg"), HasSubstr("<polyline"));
  EXPECT_TRUE(std::filesystem::exists(out + "/rank0.log"));
  EXPECT_TRUE(std::filesystem::exists(out + "/aggregator.log"));
}

// Issue 11's protocol options reach the workers and the summary: a held-out
// validation set evaluated with the test set, the warm-up, the value type,
// dense_below, global top-k and a policy variant given through
// --extra_worker_args.
TEST_F(LauncherIntegrationTest, ValidationWarmupAndValueTypeAreRecorded) {
  TempDir dir;
  const std::string out = dir.File("run");
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto launcher,
      StartLauncher({"--workers", "2", "--max_steps", "8", "--validation",
                     "5000", "--warmup_steps", "4", "--value_type", "bf16",
                     "--eval_every", "4", "--eval_samples", "1000",
                     "--dense_below", "0", "--merged_keep_factor", "1",
                     "--lr_schedule", "cosine",
                     "--extra_worker_args", "--share_hold_steps 3", "--out",
                     out}));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(int status, launcher->Wait(absl::Minutes(8)));
  ASSERT_TRUE(WIFEXITED(status)) << launcher->Output();
  ASSERT_EQ(WEXITSTATUS(status), 0) << launcher->Output();
  const std::string text = ReadFileOrEmpty(out + "/summary.json");
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(RunSummary summary, ParseRunSummaryJson(text));
  EXPECT_EQ(summary.validation, 5000) << text;
  EXPECT_EQ(summary.extra_worker_args, "--share_hold_steps 3") << text;
  EXPECT_EQ(summary.warmup_steps, 4) << text;
  EXPECT_EQ(summary.value_type, "bf16") << text;
  EXPECT_EQ(summary.dense_below, 0) << text;
  EXPECT_EQ(summary.merged_keep_factor, 1.0) << text;
  EXPECT_THAT(ReadFileOrEmpty(out + "/summary.md"),
              HasSubstr("| 0, 1 (global top-k) |"));
  EXPECT_EQ(summary.seed, 1) << text;
  EXPECT_EQ(summary.lr, 0.1) << text;
  EXPECT_EQ(summary.lr_schedule, "cosine") << text;
  ASSERT_TRUE(summary.validation_accuracy.has_value()) << text;
  EXPECT_GT(*summary.validation_accuracy, 0.0) << text;
  EXPECT_LE(*summary.validation_accuracy, 1.0) << text;
  // Every periodic evaluation carries both accuracies.
  ASSERT_FALSE(summary.evals.empty()) << text;
  EXPECT_EQ(summary.evals[0].step, 4) << text;
  for (const run_format::EvalEvent& eval : summary.evals) {
    ASSERT_TRUE(eval.validation_accuracy.has_value()) << text;
    EXPECT_GT(*eval.validation_accuracy, 0.0) << text;
    EXPECT_TRUE(eval.validation_loss.has_value()) << text;
  }
  EXPECT_TRUE(summary.replicas_identical) << text;
  EXPECT_THAT(ReadFileOrEmpty(out + "/summary.md"),
              HasSubstr("| validation accuracy (last 5000 training images"));
}

// --eval_each_epoch=false: rank 0 evaluates only after the last step. The
// epoch that ends on the way is still counted, without an accuracy, and the
// final accuracy is the summary's.
TEST_F(LauncherIntegrationTest, EvalOnlyAtTheEndSkipsEpochEvaluations) {
  TempDir dir;
  const std::string out = dir.File("run");
  // 2 ranks of 1000 images: 30 steps per epoch, so the run ends at step 40,
  // a third of the way into its second epoch.
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto launcher,
      StartLauncher({"--workers", "2", "--epochs", "2", "--max_steps", "40",
                     "--batch_size", "1000", "--eval_each_epoch=false",
                     "--eval_samples", "1000", "--out", out}));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(int status, launcher->Wait(absl::Minutes(8)));
  ASSERT_TRUE(WIFEXITED(status)) << launcher->Output();
  ASSERT_EQ(WEXITSTATUS(status), 0) << launcher->Output();
  const std::string text = ReadFileOrEmpty(out + "/summary.json");
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(RunSummary summary, ParseRunSummaryJson(text));
  EXPECT_EQ(summary.steps, 40) << text;
  EXPECT_EQ(summary.epochs_completed, 2) << text;
  ASSERT_EQ(summary.evals.size(), 1u) << text;
  EXPECT_EQ(summary.evals[0].step, 40) << text;
  ASSERT_TRUE(summary.test_accuracy.has_value()) << text;
  EXPECT_EQ(*summary.test_accuracy, summary.evals[0].test_accuracy) << text;
  EXPECT_TRUE(summary.replicas_identical) << text;
  // The progress display, fed by rank 0's epoch events, shows no accuracy
  // for the epoch that ended at step 30 and one for the last.
  const std::string shown = launcher->out();
  const auto epoch_line = [&shown](const std::string& head) {
    const size_t first = shown.find(head);
    if (first == std::string::npos) return std::string();
    return shown.substr(first, shown.find('\n', first) - first);
  };
  const std::string first_epoch = epoch_line("epoch 1/2 done:");
  ASSERT_FALSE(first_epoch.empty()) << shown;
  EXPECT_THAT(first_epoch, Not(HasSubstr("test accuracy"))) << first_epoch;
  EXPECT_THAT(epoch_line("epoch 2/2 done:"), HasSubstr("test accuracy"))
      << shown;
}

// Three aggregator shards with the CNN's large layers cut into parts of
// 64 KiB end bitwise where one shard with whole layers ends: the merge is
// element by element, so where a part is merged does not change a bit.
TEST_F(LauncherIntegrationTest, ShardsAndCutLayersEndBitwiseAsOneShard) {
  TempDir dir;
  std::vector<std::string> hashes;
  for (const auto& [shards, partition] :
       std::vector<std::pair<std::string, std::string>>{{"1", "0"},
                                                        {"3", "65536"}}) {
    const std::string out = dir.File("run" + shards);
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        auto launcher,
        StartLauncher({"--workers", "2", "--shards", shards, "--max_steps",
                       "6", "--job_id", "sharded-" + shards, "--eval_samples", "500",
                       "--extra_worker_args=--partition_bytes=" + partition,
                       "--out", out}));
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(int status,
                                   launcher->Wait(absl::Minutes(8)));
    ASSERT_TRUE(WIFEXITED(status)) << launcher->Output();
    ASSERT_EQ(WEXITSTATUS(status), 0) << launcher->Output();
    const std::string text = ReadFileOrEmpty(out + "/summary.json");
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(RunSummary summary,
                                   ParseRunSummaryJson(text));
    EXPECT_EQ(summary.shards, std::stoi(shards)) << text;
    EXPECT_TRUE(summary.replicas_identical) << text;
    hashes.push_back(summary.params_hash);
    if (shards == "3") {
      // Every shard served part of the job.
      for (int shard = 0; shard < 3; ++shard) {
        const std::string log =
            ReadFileOrEmpty(out + "/aggregator" + std::to_string(shard) + ".log");
        EXPECT_THAT(log, HasSubstr("job \"sharded-3\" created")) << shard;
      }
      EXPECT_THAT(launcher->Output(), HasSubstr("aggregator 2 (pid"));
    }
  }
  ASSERT_EQ(hashes.size(), 2u);
  EXPECT_FALSE(hashes[0].empty());
  EXPECT_EQ(hashes[0], hashes[1]);
}

// The pid of the running process whose command line holds every one of
// `needles`, or -1.
pid_t FindProcess(const std::vector<std::string>& needles) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string command_line = ReadFileOrEmpty(entry.path().string() + "/cmdline");
    std::replace(command_line.begin(), command_line.end(), '\0', ' ');
    bool all = !command_line.empty();
    for (const std::string& needle : needles) {
      all = all && command_line.find(needle) != std::string::npos;
    }
    if (all) return static_cast<pid_t>(std::stol(name));
  }
  return -1;
}

TEST_F(LauncherIntegrationTest, KilledRealWorkerIsNamedAndTheRunFails) {
  TempDir dir;
  const std::string out = dir.File("run");
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto launcher,
      StartLauncher({"--workers", "3", "--max_steps", "100000",
                              "--round_timeout", "3s", "--out", out}));
  ASSERT_TRUE(launcher->WaitForOutput("step", absl::Minutes(3)))
      << launcher->Output();
  const pid_t rank1 = FindProcess({"entrograd-worker", "--rank=1", out});
  ASSERT_GT(rank1, 0) << "rank 1's worker process not found";
  ASSERT_EQ(::kill(rank1, SIGKILL), 0);
  const absl::Time killed = absl::Now();
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(int status, launcher->Wait(absl::Minutes(2)));
  EXPECT_LT(absl::Now() - killed, absl::Seconds(60)) << "the failure took too long";
  ASSERT_TRUE(WIFEXITED(status)) << launcher->Output();
  EXPECT_NE(WEXITSTATUS(status), 0) << launcher->Output();
  EXPECT_THAT(launcher->Output(), HasSubstr("rank 1")) << launcher->Output();
  EXPECT_FALSE(std::filesystem::exists(out + "/summary.json"));
  // Nothing is left running.
  EXPECT_EQ(FindProcess({"entrograd-worker", out}), -1);
}

}  // namespace
}  // namespace entrograd::launcher::testing
