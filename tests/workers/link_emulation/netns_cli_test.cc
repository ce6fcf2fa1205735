// entrograd-netns end to end on the real kernel: skipped where link
// emulation cannot run, as CheckLinkEmulationAvailable says.
#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "support/status_matchers.h"
#include "workers/link_emulation/link_emulation_check.h"
#include "workers/link_emulation/netns_test_util.h"

namespace entrograd::link_emulation {
namespace {

using testing::CapturedProcess;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::NamespacesOfPid;
using testing::NetnsPath;
using testing::TcpRateHelperPath;

// Generous: a run takes well under a second plus what its command does.
constexpr absl::Duration kRunTimeout = absl::Seconds(60);

class NetnsCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (absl::Status status = CheckLinkEmulationAvailable(); !status.ok()) {
      GTEST_SKIP() << status.message();
    }
  }

  // entrograd-netns with `args`, started.
  std::unique_ptr<CapturedProcess> Start(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {NetnsPath()};
    argv.insert(argv.end(), args.begin(), args.end());
    absl::StatusOr<std::unique_ptr<CapturedProcess>> process =
        CapturedProcess::Start(argv);
    EXPECT_TRUE(process.ok()) << process.status();
    return process.ok() ? std::move(*process) : nullptr;
  }

  // Waits for its exit; the exit status, or -1 (test failed) when it did
  // not exit normally in time.
  int ExitCode(CapturedProcess& netns) {
    absl::StatusOr<int> status = netns.Wait(kRunTimeout);
    EXPECT_TRUE(status.ok()) << status.status();
    if (!status.ok()) return -1;
    EXPECT_TRUE(WIFEXITED(*status)) << netns.Output();
    return WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
  }

  void ExpectNothingLeft(const CapturedProcess& netns) {
    absl::StatusOr<std::vector<std::string>> left =
        NamespacesOfPid(netns.pid());
    ENTROGRAD_ASSERT_OK(left);
    EXPECT_THAT(*left, IsEmpty()) << netns.Output();
  }
};

TEST_F(NetnsCliTest, RunsTheCommandOnEveryHost) {
  std::unique_ptr<CapturedProcess> netns =
      Start({"--hosts=2", "--link=unlimited", "--", "/bin/sh", "-c",
             "echo {host} of {hosts} at {addr} to {addr0}"});
  ASSERT_NE(netns, nullptr);
  EXPECT_EQ(ExitCode(*netns), 0) << netns->Output();
  EXPECT_THAT(netns->out(), HasSubstr("0 of 2 at 10.213.0.1 to 10.213.0.1\n"));
  EXPECT_THAT(netns->out(), HasSubstr("1 of 2 at 10.213.0.2 to 10.213.0.1\n"));
  ExpectNothingLeft(*netns);
}

TEST_F(NetnsCliTest, AFailingHostFailsTheRun) {
  // Host 1 fails at once; host 0 would run for a minute and is stopped.
  std::unique_ptr<CapturedProcess> netns =
      Start({"--hosts=2", "--link=100mbit", "--", "/bin/sh", "-c",
             "if [ {host} = 1 ]; then exit 3; fi; exec sleep 60"});
  ASSERT_NE(netns, nullptr);
  EXPECT_EQ(ExitCode(*netns), 1) << netns->Output();
  EXPECT_THAT(netns->err(), HasSubstr("host 1 ("));
  EXPECT_THAT(netns->err(), HasSubstr("exited with status 3"));
  ExpectNothingLeft(*netns);
}

TEST_F(NetnsCliTest, TimeoutStopsEverything) {
  std::unique_ptr<CapturedProcess> netns = Start(
      {"--hosts=2", "--link=unlimited", "--timeout=1s", "--", "sleep", "30"});
  ASSERT_NE(netns, nullptr);
  EXPECT_EQ(ExitCode(*netns), 124) << netns->Output();
  EXPECT_THAT(netns->err(), HasSubstr("--timeout=1s reached"));
  ExpectNothingLeft(*netns);
}

TEST_F(NetnsCliTest, SigtermStopsEverything) {
  std::unique_ptr<CapturedProcess> netns =
      Start({"--hosts=2", "--link=unlimited", "--", "/bin/sh", "-c",
             "echo ready {host}; exec sleep 60"});
  ASSERT_NE(netns, nullptr);
  // Both hosts run once both have printed.
  ASSERT_TRUE(netns->WaitForOutput("ready 0", kRunTimeout)) << netns->Output();
  ASSERT_TRUE(netns->WaitForOutput("ready 1", kRunTimeout)) << netns->Output();
  netns->Signal(SIGTERM);
  EXPECT_EQ(ExitCode(*netns), 128 + SIGTERM) << netns->Output();
  EXPECT_THAT(netns->err(), HasSubstr("SIGTERM: stopping the hosts"));
  ExpectNothingLeft(*netns);
}

TEST_F(NetnsCliTest, HostsTalkAndTheirTrafficIsCounted) {
  // Host 0 receives, host 1 sends to {addr0} (retrying its connect until
  // host 0 listens).
  constexpr int64_t kBytes = 2'000'000;
  const std::string path = absl::StrCat(
      ::testing::TempDir(), "/netns_counters_", ::getpid(), ".json");
  const std::string helper = TcpRateHelperPath();
  std::unique_ptr<CapturedProcess> netns =
      Start({"--hosts=2", "--link=1gbit", absl::StrCat("--counters_out=", path),
             "--", "/bin/sh", "-c",
             absl::StrCat("if [ {host} = 0 ]; then exec ", helper,
                          " receive 5201; else exec ", helper,
                          " send {addr0} 5201 ", kBytes, "; fi")});
  ASSERT_NE(netns, nullptr);
  EXPECT_EQ(ExitCode(*netns), 0) << netns->Output();
  EXPECT_THAT(netns->out(), HasSubstr(absl::StrCat("received ", kBytes, " ")));
  EXPECT_THAT(netns->out(), HasSubstr(absl::StrCat("sent ", kBytes, "\n")));
  ExpectNothingLeft(*netns);

  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  std::remove(path.c_str());
  const std::string json = text.str();
  EXPECT_THAT(json, HasSubstr("{\"link\":\"1gbit\",\"rate_bits_per_second\":"
                              "1000000000,\"hosts\":["));
  const std::string prefix = absl::StrCat("eg", netns->pid(), "-");
  const nlohmann::json parsed =
      nlohmann::json::parse(json, nullptr,
                            /*allow_exceptions=*/false);
  ASSERT_FALSE(parsed.is_discarded()) << json;
  ASSERT_EQ(parsed.value("hosts", nlohmann::json::array()).size(), 2u) << json;
  int64_t rx[2] = {-1, -1};
  int64_t tx[2] = {-1, -1};
  for (int host = 0; host < 2; ++host) {
    const nlohmann::json& entry = parsed["hosts"][host];
    EXPECT_EQ(entry.value("host", -1), host) << json;
    EXPECT_THAT(entry.value("namespace", ""), ::testing::StartsWith(prefix))
        << json;
    EXPECT_EQ(entry.value("address", ""), absl::StrCat("10.213.0.", host + 1))
        << json;
    rx[host] = entry.value("rx_bytes", int64_t{-1});
    tx[host] = entry.value("tx_bytes", int64_t{-1});
  }
  EXPECT_GE(tx[1], kBytes) << json;
  EXPECT_GE(rx[0], kBytes) << json;
  EXPECT_LT(tx[0], kBytes / 10) << json;
}

TEST_F(NetnsCliTest, BadFlagsAreAUsageError) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--hosts=0", "--link=1gbit", "--", "true"},
        std::vector<std::string>{"--hosts=2", "--link=fast", "--", "true"},
        std::vector<std::string>{"--hosts=2", "--link=1gbit"}}) {
    std::unique_ptr<CapturedProcess> netns = Start(args);
    ASSERT_NE(netns, nullptr);
    EXPECT_EQ(ExitCode(*netns), 2) << netns->Output();
  }
}

}  // namespace
}  // namespace entrograd::link_emulation
