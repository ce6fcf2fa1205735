// Failure handling of entrograd-launch, process against process: the real
// aggregator, and stand-in workers (shell scripts) that fail on purpose.
// The stand-ins exist only for these failure paths; the success path runs
// the real worker (launcher_integration_test.cc).
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "support/wait_for.h"
#include "workers/launcher/launcher_test_util.h"

namespace entrograd::launcher::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::Duration kRunTimeout = absl::Seconds(60);

class LauncherProcessTest : public ::testing::Test {
 protected:
  // Flags for a run of `workers` stand-in workers doing `body` after their
  // start event.
  std::vector<std::string> Flags(int workers, const std::string& body) {
    const std::string worker =
        WriteStandInWorker(dir_.path(), dir_.path(), workers, body);
    return {absl::StrCat("--workers=", workers), "--worker_bin=" + worker,
            "--aggregator_bin=" + AggregatorPath(), "--out=" + OutDir()};
  }
  std::string OutDir() const { return dir_.File("out"); }

  // Every worker's pid file appeared (each started and ran its script).
  bool WaitForWorkers(int workers, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    for (int rank = 0; rank < workers; ++rank) {
      while (ReadWorkerPid(dir_.path(), rank) <= 0) {
        if (absl::Now() >= deadline) return false;
        absl::SleepFor(absl::Milliseconds(20));
      }
    }
    return true;
  }

  // No worker and no aggregator of this run is left.
  void ExpectAllGone(int workers, const LauncherProcess& launcher) {
    for (int rank = 0; rank < workers; ++rank) {
      const pid_t pid = ReadWorkerPid(dir_.path(), rank);
      if (pid <= 0) continue;  // never started
      EXPECT_TRUE(WaitUntilGone(pid, absl::Seconds(2)))
          << "worker " << rank << " (pid " << pid << ") outlived the launcher";
    }
    const pid_t aggregator = AggregatorPidFromOutput(launcher.Output());
    ASSERT_GT(aggregator, 0) << launcher.Output();
    EXPECT_TRUE(WaitUntilGone(aggregator, absl::Seconds(2)))
        << "the aggregator (pid " << aggregator << ") outlived the launcher";
  }

  TempDir dir_;
};

TEST_F(LauncherProcessTest, WorkerExitingNonZeroIsNamedAndStopsTheRest) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto launcher,
      StartLauncher(Flags(2,
                                   "if [ \"$rank\" = 1 ]; then\n"
                                   "  echo 'loading shard 1'\n"
                                   "  echo 'boom: out of memory' >&2\n"
                                   "  exit 3\n"
                                   "fi\n"
                                   "exec sleep 60")));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(int status, launcher->Wait(kRunTimeout));
  ASSERT_TRUE(WIFEXITED(status)) << launcher->Output();
  EXPECT_EQ(WEXITSTATUS(status), 1) << launcher->Output();
  EXPECT_THAT(launcher->err(),
              HasSubstr("rank 1 failed: exited with status 3"));
  // Its log, quoted: the stdout line that was no event, and stderr.
  EXPECT_THAT(launcher->err(), HasSubstr("loading shard 1"));
  EXPECT_THAT(launcher->err(), HasSubstr("boom: out of memory"));
  const std::string log = ReadFileOrEmpty(OutDir() + "/rank1.log");
  EXPECT_THAT(log, HasSubstr("loading shard 1\n"));
  EXPECT_THAT(log, HasSubstr("boom: out of memory\n"));
  EXPECT_THAT(log, Not(HasSubstr("\"event\"")));  // events are not log lines
  EXPECT_FALSE(std::filesystem::exists(OutDir() + "/summary.json"));
  ExpectAllGone(2, *launcher);
}

TEST_F(LauncherProcessTest, ErrorEventIsReported) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto launcher,
      StartLauncher(
          Flags(2,
                "if [ \"$rank\" = 0 ]; then\n"
                "  echo '{\"event\":\"error\",\"rank\":0,\"message\":\"NaN in "
                "conv1.weight\"}'\n"
                "fi\n"
                "exec sleep 60")));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(int status, launcher->Wait(kRunTimeout));
  ASSERT_TRUE(WIFEXITED(status)) << launcher->Output();
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_THAT(
      launcher->err(),
      HasSubstr("rank 0 failed: reported an error: NaN in conv1.weight"));
  ExpectAllGone(2, *launcher);
}

TEST_F(LauncherProcessTest, ExitingZeroWithoutDoneIsAFailure) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(auto launcher,
                                 StartLauncher(Flags(1, "exit 0")));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(int status, launcher->Wait(kRunTimeout));
  ASSERT_TRUE(WIFEXITED(status)) << launcher->Output();
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_THAT(launcher->err(),
              HasSubstr("rank 0 failed: exited with status 0 without sending "
                        "its done event"));
  ExpectAllGone(1, *launcher);
}

TEST_F(LauncherProcessTest, SigintStopsEverythingAndExits130) {
  std::vector<std::string> flags = Flags(2, "exec sleep 60");
  // The default aggregator: the one beside the launcher in this build.
  flags.erase(flags.begin() + 2);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(auto launcher, StartLauncher(flags));
  ASSERT_TRUE(launcher->WaitForOutput("job ", absl::Seconds(30)))
      << launcher->Output();
  ASSERT_TRUE(WaitForWorkers(2, absl::Seconds(10))) << launcher->Output();
  launcher->Signal(SIGINT);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(int status, launcher->Wait(kRunTimeout));
  ASSERT_TRUE(WIFEXITED(status)) << launcher->Output();
  EXPECT_EQ(WEXITSTATUS(status), 130) << launcher->Output();
  EXPECT_THAT(launcher->err(), HasSubstr("SIGINT"));
  ExpectAllGone(2, *launcher);
}

TEST_F(LauncherProcessTest, SigtermExits143) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto launcher, StartLauncher(Flags(1, "exec sleep 60")));
  ASSERT_TRUE(WaitForWorkers(1, absl::Seconds(30))) << launcher->Output();
  launcher->Signal(SIGTERM);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(int status, launcher->Wait(kRunTimeout));
  ASSERT_TRUE(WIFEXITED(status)) << launcher->Output();
  EXPECT_EQ(WEXITSTATUS(status), 143) << launcher->Output();
  ExpectAllGone(1, *launcher);
}

TEST_F(LauncherProcessTest, WorkerIgnoringSigtermIsKilledAfterTheGrace) {
  // The marker is written after the trap: the pid file alone appears before
  // the trap runs, and a loaded machine once delivered SIGTERM in between,
  // so the stand-in died at once and no kill was needed.
  const std::string trapped = dir_.File("trapped");
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto launcher,
      StartLauncher(Flags(
          1, "trap '' TERM\ntouch '" + trapped + "'\nexec sleep 60")));
  ASSERT_TRUE(WaitForWorkers(1, absl::Seconds(30))) << launcher->Output();
  ASSERT_TRUE(::entrograd::testing::WaitFor(
      [&] { return std::filesystem::exists(trapped); }, absl::Seconds(30)))
      << launcher->Output();
  const absl::Time interrupted = absl::Now();
  launcher->Signal(SIGINT);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(int status, launcher->Wait(kRunTimeout));
  const absl::Duration took = absl::Now() - interrupted;
  ASSERT_TRUE(WIFEXITED(status)) << launcher->Output();
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_THAT(
      launcher->err(),
      HasSubstr("rank 0 (pid " + std::to_string(ReadWorkerPid(dir_.path(), 0)) +
                ") did not stop after SIGTERM; killing it"));
  EXPECT_GE(took, absl::Seconds(4.5));
  EXPECT_LT(took, absl::Seconds(20));
  ExpectAllGone(1, *launcher);
}

TEST_F(LauncherProcessTest, AggregatorDeathIsReported) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      auto launcher, StartLauncher(Flags(2, "exec sleep 60")));
  ASSERT_TRUE(launcher->WaitForOutput("job ", absl::Seconds(30)))
      << launcher->Output();
  ASSERT_TRUE(WaitForWorkers(2, absl::Seconds(10))) << launcher->Output();
  const pid_t aggregator = AggregatorPidFromOutput(launcher->Output());
  ASSERT_GT(aggregator, 0) << launcher->Output();
  ASSERT_EQ(::kill(aggregator, SIGKILL), 0);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(int status, launcher->Wait(kRunTimeout));
  ASSERT_TRUE(WIFEXITED(status)) << launcher->Output();
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_THAT(launcher->err(),
              HasSubstr("aggregator failed: killed by signal 9"));
  ExpectAllGone(2, *launcher);
}

TEST_F(LauncherProcessTest, SilentAggregatorTimesOut) {
  const std::string aggregator =
      WriteExecutable(dir_.path(), "silent-aggregator.sh",
                      "#!/bin/sh\necho 'starting up' >&2\nexec sleep 60\n");
  std::vector<std::string> flags = Flags(1, "exec sleep 60");
  flags[2] = "--aggregator_bin=" + aggregator;
  flags.push_back("--aggregator_start_timeout=1s");
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(auto launcher, StartLauncher(flags));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(int status, launcher->Wait(kRunTimeout));
  ASSERT_TRUE(WIFEXITED(status)) << launcher->Output();
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_THAT(
      launcher->err(),
      HasSubstr("aggregator failed: did not report its port within 1s"));
  EXPECT_THAT(launcher->err(), HasSubstr("starting up"));
  EXPECT_EQ(ReadWorkerPid(dir_.path(), 0), -1);  // no worker was started
}

TEST_F(LauncherProcessTest, ThresholdFlagReachesTheWorker) {
  // The stand-in writes its command line, then fails: the run stops there.
  std::vector<std::string> flags = Flags(
      1,
      absl::StrCat("echo \"$@\" > '", dir_.path(), "/args'\"$rank\"\nexit 3"));
  flags.push_back("--policy=threshold");
  flags.push_back("--threshold=2.5");
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(auto launcher, StartLauncher(flags));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(int status, launcher->Wait(kRunTimeout));
  ASSERT_TRUE(WIFEXITED(status)) << launcher->Output();
  EXPECT_EQ(WEXITSTATUS(status), 1) << launcher->Output();
  const std::string args = ReadFileOrEmpty(dir_.File("args0"));
  EXPECT_THAT(args, HasSubstr("--policy=threshold")) << args;
  EXPECT_THAT(args, HasSubstr("--threshold=2.5")) << args;
}

TEST_F(LauncherProcessTest, BadFlagsExit2NamingTheFlag) {
  for (const auto& [flag, name] :
       std::vector<std::pair<std::string, std::string>>{
           {"--workers=0", "--workers"},
           {"--policy=random", "--policy"},
           {"--rho=2.5", "--rho"},
           {"--threshold=-1", "--threshold"},
           {"--worker_bin=/nonexistent/worker", "--worker_bin"}}) {
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        auto launcher,
        StartLauncher({flag, "--aggregator_bin=" + AggregatorPath(),
                                "--out=" + OutDir()}));
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(int status, launcher->Wait(kRunTimeout));
    ASSERT_TRUE(WIFEXITED(status)) << launcher->Output();
    EXPECT_EQ(WEXITSTATUS(status), 2) << flag;
    EXPECT_THAT(launcher->err(), HasSubstr(name)) << flag;
  }
}

}  // namespace
}  // namespace entrograd::launcher::testing
