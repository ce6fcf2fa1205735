// The success path, end to end: entrograd-launch with the real aggregator
// and the real Fashion-MNIST worker. Skipped while entrograd-worker is not
// built (it needs LibTorch).
#include <sys/wait.h>

#include <filesystem>
#include <string>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "workers/launcher/flat_json.h"
#include "workers/launcher/launcher_test_util.h"

namespace entrograd::launcher::testing {
namespace {

using ::testing::HasSubstr;

TEST(LauncherIntegrationTest, TwoWorkersTwentyStepsSucceed) {
  if (!std::filesystem::exists(WorkerPath())) {
    GTEST_SKIP() << "entrograd-worker not built (" << WorkerPath() << ")";
  }
  TempDir dir;
  const std::string out = dir.File("run");
  // The worker and aggregator binaries are the defaults: found beside the
  // launcher in this build tree.
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto launcher, LauncherProcess::Start({"--workers", "2", "--max_steps",
                                             "20", "--out", out}));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(int status, launcher->Wait(absl::Minutes(8)));
  ASSERT_TRUE(WIFEXITED(status)) << launcher->Output();
  ASSERT_EQ(WEXITSTATUS(status), 0) << launcher->Output();
  EXPECT_THAT(launcher->out(), HasSubstr("results in"));

  const std::string text = ReadFileOrEmpty(out + "/summary.json");
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(FlatJsonObject summary,
                                 ParseFlatJsonObject(text));
  for (const char* key :
       {"policy", "workers", "steps", "epochs", "rho", "test_accuracy",
        "test_loss", "uplink_wire_bytes", "downlink_wire_bytes",
        "dense_equivalent_bytes", "compression_ratio", "seconds",
        "seconds_per_step", "replicas_identical"}) {
    EXPECT_TRUE(summary.count(key)) << key << " missing in\n" << text;
  }
  EXPECT_EQ(summary["policy"].string, "entropy");
  EXPECT_EQ(summary["workers"].number, 2);
  EXPECT_EQ(summary["steps"].number, 20);
  EXPECT_EQ(summary["replicas_identical"].type, JsonValue::Type::kBool);
  EXPECT_TRUE(summary["replicas_identical"].boolean) << text;
  EXPECT_GT(summary["compression_ratio"].number, 10) << text;
  EXPECT_GT(summary["test_accuracy"].number, 0) << text;
  EXPECT_GT(summary["uplink_wire_bytes"].number, 0) << text;

  EXPECT_THAT(ReadFileOrEmpty(out + "/summary.md"), HasSubstr("| policy |"));
  EXPECT_THAT(ReadFileOrEmpty(out + "/plot.svg"), HasSubstr("<polyline"));
  EXPECT_TRUE(std::filesystem::exists(out + "/rank0.log"));
  EXPECT_TRUE(std::filesystem::exists(out + "/aggregator.log"));
}

}  // namespace
}  // namespace entrograd::launcher::testing
