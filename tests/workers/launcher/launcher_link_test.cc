// entrograd-launch end to end with the real aggregator and worker: the
// communication-bound model with periodic evaluation and the per-step
// breakdown, and link emulation (namespaces, veth, tbf) with its clean-up.
// Skipped while entrograd-worker is not built; the link tests also skip,
// saying why, where network namespaces cannot be made (not root, no ip).
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "workers/launcher/flat_json.h"
#include "workers/launcher/launcher_test_util.h"
#include "workers/link_emulation/link_topology.h"

namespace entrograd::launcher::testing {
namespace {

using ::testing::HasSubstr;

double Number(FlatJsonObject& summary, const char* key) {
  EXPECT_EQ(summary[key].type, JsonValue::Type::kNumber) << key;
  return summary[key].number;
}

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
  absl::StatusOr<FlatJsonObject> Summary() {
    return ParseFlatJsonObject(ReadFileOrEmpty(Out() + "/summary.json"));
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
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(FlatJsonObject summary, Summary());
  EXPECT_EQ(summary["model"].string, "wide");
  EXPECT_EQ(Number(summary, "parameters"), 25832330);
  EXPECT_EQ(Number(summary, "steps"), 4);
  EXPECT_TRUE(summary["replicas_identical"].boolean)
      << "the ranks' parameters differ after training the wide model";
  // Sparse: far fewer bytes than the 103 MB dense gradient per rank-step.
  EXPECT_GT(Number(summary, "compression_ratio"), 10);

  // Periodic evaluation: steps 2 and 4, with increasing clocks.
  const std::string json = ReadFileOrEmpty(Out() + "/summary.json");
  EXPECT_THAT(json, HasSubstr("\"evals\": [{\"step\": 2, \"seconds\": "));
  EXPECT_THAT(json, HasSubstr("}, {\"step\": 4, \"seconds\": "));
  EXPECT_EQ(summary["eval_every"].number, 2);
  EXPECT_THAT(ReadFileOrEmpty(Out() + "/summary.md"),
              HasSubstr("| test accuracy at step 2 |"));

  // The breakdown: every phase present, ordered sanely.
  EXPECT_EQ(Number(summary, "breakdown_samples"), 8) << "2 ranks x 4 steps";
  for (const char* phase :
       {"forward_backward", "compress", "wait", "apply", "step"}) {
    const double median =
        Number(summary, absl::StrCat(phase, "_seconds_median").c_str());
    const double p90 =
        Number(summary, absl::StrCat(phase, "_seconds_p90").c_str());
    EXPECT_GE(median, 0) << phase;
    EXPECT_GE(p90, median) << phase;
  }
  EXPECT_GT(Number(summary, "forward_backward_seconds_median"), 0);
  EXPECT_GT(Number(summary, "compress_seconds_median"), 0);
  EXPECT_LE(Number(summary, "forward_backward_seconds_median") +
                Number(summary, "compress_seconds_median"),
            Number(summary, "step_seconds_p90") * 1.0001 +
                Number(summary, "step_seconds_median"))
      << "parts larger than the whole";
  EXPECT_GT(Number(summary, "train_seconds"), 0);
  EXPECT_EQ(summary["link"].type, JsonValue::Type::kNull);
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
                          "--link=100mbit", "--timeout=5m", "--out=" + Out()}));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(int status, launcher->Wait(absl::Minutes(6)));
  ASSERT_TRUE(WIFEXITED(status)) << launcher->Output();
  ASSERT_EQ(WEXITSTATUS(status), 0) << launcher->Output();
  EXPECT_THAT(launcher->Output(),
              HasSubstr("link emulation: 3 network namespaces"));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(FlatJsonObject summary, Summary());
  EXPECT_EQ(summary["link"].string, "100mbit");
  const double payload = Number(summary, "wire_bytes");
  const double on_links = Number(summary, "link_bytes");
  // Dense: every non-zero of the 1.8 MB gradient (ReLU leaves some exact
  // zeros, which the encoder drops), 5 steps, 2 ranks.
  EXPECT_GT(Number(summary, "uplink_wire_bytes"), 5 * 2 * 0.9e6);
  EXPECT_GE(on_links, payload)
      << "the interfaces carried less than the payload";
  EXPECT_LT(on_links, payload * 1.5) << "more than framing overhead";
  const double downlink_rate_bits =
      8 * Number(summary, "link_aggregator_sent_bytes") /
      Number(summary, "train_seconds");
  EXPECT_LE(downlink_rate_bits, 1.15e8)
      << "the aggregator sent faster than its 100mbit link allows";
  EXPECT_TRUE(summary["replicas_identical"].boolean);
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
                     "--job_id=two-shards",
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
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(FlatJsonObject summary, Summary());
  EXPECT_EQ(Number(summary, "shards"), 2);
  EXPECT_TRUE(summary["replicas_identical"].boolean);
  // Dense: the shards sent each rank the merged gradient, ~1.8 MB a step.
  EXPECT_GT(Number(summary, "link_aggregator_sent_bytes"), 3 * 2 * 0.9e6);
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
