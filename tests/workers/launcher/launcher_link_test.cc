// entrograd-launch end to end with the real aggregator and worker: the
// communication-bound model with periodic evaluation and the per-step
// breakdown, and link emulation (namespaces, veth, tbf) with its clean-up.
// Skipped while entrograd-worker is not built; the link tests also skip,
// saying why, where network namespaces cannot be made (not root, no ip).
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "workers/launcher/launcher_test_util.h"
#include "workers/link_emulation/link_topology.h"
#include "workers/run_format/run_summary.h"

namespace entrograd::launcher::testing {
namespace {

using run_format::PhaseStats;
using run_format::RunSummary;
using run_format::StepBreakdown;
using ::testing::HasSubstr;

// The namespaces `ip netns list` shows whose name holds `needle`.
std::vector<std::string> NamespacesWith(const std::string& needle) {
  std::vector<std::string> found;
  std::error_code error;
  for (const auto& entry :
       std::filesystem::directory_iterator("/var/run/netns", error)) {
    const std::string name = entry.path().filename().string();
    if (absl::StrContains(name, needle)) found.push_back(name);
  }
  return found;
}

class LauncherLinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(WorkerPath())) {
      GTEST_SKIP() << "entrograd-worker not built (" << WorkerPath() << ")";
    }
  }
  void RequireLinkEmulation() {
    absl::Status available = link_emulation::CheckLinkEmulationAvailable();
    if (!available.ok()) {
      GTEST_SKIP() << "link emulation unavailable: " << available.message();
    }
  }
  absl::StatusOr<RunSummary> Summary() {
    return run_format::ParseRunSummaryJson(
        ReadFileOrEmpty(Out() + "/summary.json"));
  }
  std::string Out() const { return dir_.File("run"); }

  TempDir dir_;
};

TEST_F(LauncherLinkTest,
       WideModelTrainsWithIdenticalReplicasEvalsAndBreakdown) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto launcher,
      StartLauncher({"--workers=2", "--model=wide", "--max_steps=4",
                              "--batch_size=8", "--eval_every=2",
                              "--eval_samples=500", "--out=" + Out()}));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(int status, launcher->Wait(absl::Minutes(8)));
  ASSERT_TRUE(WIFEXITED(status)) << launcher->Output();
  ASSERT_EQ(WEXITSTATUS(status), 0) << launcher->Output();
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(RunSummary summary, Summary());
  EXPECT_EQ(summary.model, "wide");
  EXPECT_EQ(summary.parameters, 25832330);
  EXPECT_EQ(summary.steps, 4);
  EXPECT_TRUE(summary.replicas_identical)
      << "the ranks' parameters differ after training the wide model";
  // Sparse: far fewer bytes than the 103 MB dense gradient per rank-step.
  EXPECT_GT(summary.compression_ratio, 10);

  // Periodic evaluation: steps 2 and 4, with increasing clocks.
  ASSERT_EQ(summary.evals.size(), 2u);
  EXPECT_EQ(summary.evals[0].step, 2);
  EXPECT_EQ(summary.evals[1].step, 4);
  EXPECT_LT(summary.evals[0].seconds, summary.evals[1].seconds);
  EXPECT_EQ(summary.eval_every, 2);
  EXPECT_THAT(ReadFileOrEmpty(Out() + "/summary.md"),
              HasSubstr("| test accuracy at step 2 |"));

  // The breakdown: every phase present, ordered sanely.
  const StepBreakdown& breakdown = summary.breakdown;
  EXPECT_EQ(breakdown.samples, 8) << "2 ranks x 4 steps";
  for (const auto& [phase, stats] :
       {std::pair<const char*, PhaseStats>{"forward_backward",
                                           breakdown.forward_backward},
        {"compress", breakdown.compress},
        {"wait", breakdown.wait},
        {"apply", breakdown.apply},
        {"step", breakdown.step}}) {
    EXPECT_GE(stats.median, 0) << phase;
    EXPECT_GE(stats.p90, stats.median) << phase;
  }
  EXPECT_GT(breakdown.forward_backward.median, 0);
  EXPECT_GT(breakdown.compress.median, 0);
  EXPECT_LE(breakdown.forward_backward.median + breakdown.compress.median,
            breakdown.step.p90 * 1.0001 + breakdown.step.median)
      << "parts larger than the whole";
  ASSERT_TRUE(summary.train_seconds.has_value());
  EXPECT_GT(*summary.train_seconds, 0);
  EXPECT_FALSE(summary.link.has_value());
}

// The smoke test of link emulation: 2 ranks, a few dense steps over
// 100 Mbit/s links. The aggregator's link cannot have carried more than the
// rate allows, the interfaces carried at least the payload, and nothing the
// run created is left behind.
TEST_F(LauncherLinkTest, LinkEmulationLimitsTheRateAndLeavesNothingBehind) {
  RequireLinkEmulation();
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto launcher, StartLauncher(
                         {"--workers=2", "--policy=dense", "--max_steps=5",
                          "--link=100mbit", "--timeout=5m", "--eval_samples=500",
                          "--out=" + Out()}));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(int status, launcher->Wait(absl::Minutes(6)));
  ASSERT_TRUE(WIFEXITED(status)) << launcher->Output();
  ASSERT_EQ(WEXITSTATUS(status), 0) << launcher->Output();
  EXPECT_THAT(launcher->Output(),
              HasSubstr("link emulation: 3 network namespaces"));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(RunSummary summary, Summary());
  ASSERT_TRUE(summary.link.has_value());
  EXPECT_EQ(summary.link->rate, "100mbit");
  const double payload = static_cast<double>(summary.bytes.wire());
  const double on_links = static_cast<double>(summary.link->total());
  // Dense: every non-zero of the 1.8 MB gradient (ReLU leaves some exact
  // zeros, which the encoder drops), 5 steps, 2 ranks.
  EXPECT_GT(summary.bytes.uplink, 5 * 2 * 0.9e6);
  EXPECT_GE(on_links, payload)
      << "the interfaces carried less than the payload";
  EXPECT_LT(on_links, payload * 1.5) << "more than framing overhead";
  ASSERT_TRUE(summary.train_seconds.has_value());
  const double downlink_rate_bits =
      8 * static_cast<double>(summary.link->aggregator_sent) /
      *summary.train_seconds;
  EXPECT_LE(downlink_rate_bits, 1.15e8)
      << "the aggregator sent faster than its 100mbit link allows";
  EXPECT_TRUE(summary.replicas_identical);
  EXPECT_THAT(NamespacesWith(absl::StrCat("eg", launcher->pid(), "-")),
              ::testing::IsEmpty());
}

// Two shards, each in its own namespace behind its own link, with the
// CNN's large layer cut into parts: both shards serve the job, and the
// aggregators' links together carried the downlink.
TEST_F(LauncherLinkTest, EveryShardGetsItsOwnNamespaceAndLink) {
  RequireLinkEmulation();
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto launcher,
      StartLauncher({"--workers=2", "--shards=2", "--policy=dense",
                     "--max_steps=3", "--link=100mbit", "--timeout=5m",
                     "--job_id=two-shards", "--eval_samples=500",
                     "--extra_worker_args=--partition_bytes=262144",
                     "--out=" + Out()}));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(int status, launcher->Wait(absl::Minutes(6)));
  ASSERT_TRUE(WIFEXITED(status)) << launcher->Output();
  ASSERT_EQ(WEXITSTATUS(status), 0) << launcher->Output();
  EXPECT_THAT(launcher->Output(),
              HasSubstr("link emulation: 4 network namespaces"));
  EXPECT_THAT(launcher->Output(), HasSubstr("aggregators at 10.213."));
  for (int shard = 0; shard < 2; ++shard) {
    EXPECT_THAT(ReadFileOrEmpty(absl::StrCat(Out(), "/aggregator", shard,
                                             ".log")),
                HasSubstr("job \"two-shards\" created"))
        << "shard " << shard << " served nothing";
  }
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(RunSummary summary, Summary());
  EXPECT_EQ(summary.shards, 2);
  EXPECT_TRUE(summary.replicas_identical);
  // Dense: the shards sent each rank the merged gradient, ~1.8 MB a step.
  ASSERT_TRUE(summary.link.has_value());
  EXPECT_GT(summary.link->aggregator_sent, 3 * 2 * 0.9e6);
  EXPECT_THAT(NamespacesWith(absl::StrCat("eg", launcher->pid(), "-")),
              ::testing::IsEmpty());
}

TEST_F(LauncherLinkTest, InterruptedLinkRunRemovesItsNamespaces) {
  RequireLinkEmulation();
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto launcher,
      StartLauncher({"--workers=2", "--max_steps=100000",
                              "--link=1gbit", "--out=" + Out()}));
  ASSERT_TRUE(launcher->WaitForOutput("step", absl::Minutes(3)))
      << launcher->Output();
  const std::string ours = absl::StrCat("eg", launcher->pid(), "-");
  EXPECT_EQ(NamespacesWith(ours).size(), 4u) << "3 hosts and the hub";
  launcher->Signal(SIGINT);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(int status, launcher->Wait(absl::Minutes(1)));
  ASSERT_TRUE(WIFEXITED(status)) << launcher->Output();
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT) << launcher->Output();
  EXPECT_THAT(NamespacesWith(ours), ::testing::IsEmpty());
}

TEST_F(LauncherLinkTest, BadLinkRateIsRefusedBeforeAnythingStarts) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto launcher,
      StartLauncher({"--workers=2", "--link=fast", "--out=" + Out()}));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(int status, launcher->Wait(absl::Seconds(30)));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 0);
  EXPECT_THAT(launcher->err(), HasSubstr("--link must be"));
}

}  // namespace
}  // namespace entrograd::launcher::testing
