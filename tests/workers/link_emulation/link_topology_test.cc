// LinkTopology on the real kernel: skipped where link emulation cannot run
// (not root, no iproute2, no tbf), as CheckLinkEmulationAvailable says.
#include "workers/link_emulation/link_topology.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "workers/link_emulation/ip_command.h"
#include "workers/link_emulation/link_emulation_check.h"
#include "workers/link_emulation/netns_commands.h"
#include "workers/link_emulation/netns_test_util.h"
#include "workers/link_emulation/stale_topologies.h"

namespace entrograd::link_emulation {
namespace {

using ::entrograd::testing::StatusIs;
using testing::CapturedProcess;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::NamespacesNow;
using ::testing::Not;
using testing::TcpRateHelperPath;

constexpr int64_t kTransferBytes = 25'000'000;
constexpr char kPort[] = "5201";

// The topology's namespaces (hub included) that `ip netns list` still has.
std::vector<std::string> Remaining(const std::vector<std::string>& names) {
  absl::StatusOr<std::vector<std::string>> now = NamespacesNow();
  EXPECT_TRUE(now.ok()) << now.status();
  std::vector<std::string> remaining;
  if (!now.ok()) return remaining;
  for (const std::string& name : names) {
    if (std::find(now->begin(), now->end(), name) != now->end()) {
      remaining.push_back(name);
    }
  }
  return remaining;
}

std::vector<std::string> AllNamespaces(const LinkTopology& topology) {
  std::vector<std::string> names = {topology.hub_namespace()};
  for (int host = 0; host < topology.hosts(); ++host) {
    names.push_back(topology.namespace_name(host));
  }
  return names;
}

std::string Qdiscs(const std::string& netns, const std::string& device) {
  absl::StatusOr<std::string> tc = FindSystemTool("tc", "iproute2");
  if (!tc.ok()) return std::string(tc.status().message());
  absl::StatusOr<std::string> shown =
      RunCommand({*tc, "-n", netns, "qdisc", "show", "dev", device});
  return shown.ok() ? *shown : std::string(shown.status().message());
}

// Where link emulation cannot run, every test of the fixture is skipped
// with CheckLinkEmulationAvailable's reason.
class LinkTopologyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (absl::Status status = CheckLinkEmulationAvailable(); !status.ok()) {
      GTEST_SKIP() << status.message();
    }
  }
};

TEST(LinkTopologyArgumentsTest, RejectsNoHosts) {
  EXPECT_THAT(LinkTopology::Create(0, LinkRate{}),
              StatusIs(absl::StatusCode::kInvalidArgument, "not 0"));
  EXPECT_THAT(LinkTopology::Create(LinkTopology::kMaxHosts + 1, LinkRate{}),
              StatusIs(absl::StatusCode::kInvalidArgument, "1 to 253"));
}

TEST_F(LinkTopologyTest, LimitsTheRateAndCountsBytes) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(const LinkRate rate, ParseLinkRate("100mbit"));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<LinkTopology> topology,
                                 LinkTopology::Create(2, rate));
  ASSERT_EQ(topology->hosts(), 2);
  EXPECT_EQ(topology->address(0), "10.213.0.1");
  EXPECT_EQ(topology->address(1), "10.213.0.2");
  EXPECT_EQ(
      topology->namespace_name(1).rfind(absl::StrCat("eg", ::getpid()), 0), 0u);
  // tbf on both ends of every host link.
  for (int host = 0; host < 2; ++host) {
    EXPECT_THAT(Qdiscs(topology->namespace_name(host), "eth0"),
                HasSubstr("rate 100Mbit"));
    EXPECT_THAT(Qdiscs(topology->hub_namespace(), absl::StrCat("h", host)),
                HasSubstr("rate 100Mbit"));
  }
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      const std::vector<LinkTopology::Counters> before,
      topology->ReadCounters());

  // Host 1 sends to host 0; the receiver listens before the sender starts.
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<CapturedProcess> receiver,
      CapturedProcess::Start(
          topology->CommandInHost(0, {TcpRateHelperPath(), "receive", kPort})));
  ASSERT_TRUE(receiver->WaitForOutput("listening", absl::Seconds(30)))
      << receiver->Output();
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<CapturedProcess> sender,
      CapturedProcess::Start(topology->CommandInHost(
          1, {TcpRateHelperPath(), "send", topology->address(0), kPort,
              absl::StrCat(kTransferBytes)})));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(const int receiver_status,
                                 receiver->Wait(absl::Seconds(60)));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(const int sender_status,
                                 sender->Wait(absl::Seconds(30)));
  ASSERT_TRUE(WIFEXITED(receiver_status) && WEXITSTATUS(receiver_status) == 0)
      << receiver->Output();
  ASSERT_TRUE(WIFEXITED(sender_status) && WEXITSTATUS(sender_status) == 0)
      << sender->Output();

  long long received = 0;
  double seconds = 0;
  ASSERT_EQ(std::sscanf(receiver->out().c_str(), "listening\nreceived %lld %lf",
                        &received, &seconds),
            2)
      << receiver->Output();
  EXPECT_EQ(received, kTransferBytes);
  ASSERT_GT(seconds, 0);
  // TCP goodput over a shaped link: below the line rate by the headers
  // (~5% at MTU 1500), never far above it (the bucket is 50 kB).
  const double bits_per_second = received * 8.0 / seconds;
  std::cout << "measured " << bits_per_second / 1e6 << " Mbit/s at 100mbit ("
            << received << " bytes in " << seconds << " s)\n";
  RecordProperty("measured_mbit_per_second",
                 absl::StrCat(bits_per_second / 1e6));
  EXPECT_GE(bits_per_second, 0.5 * rate.bits_per_second);
  EXPECT_LE(bits_per_second, 1.1 * rate.bits_per_second);

  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      const std::vector<LinkTopology::Counters> after,
      topology->ReadCounters());
  ASSERT_EQ(after.size(), 2u);
  EXPECT_GE(after[1].tx_bytes - before[1].tx_bytes, kTransferBytes);
  EXPECT_GE(after[0].rx_bytes - before[0].rx_bytes, kTransferBytes);
  // The other direction carried only acknowledgements.
  EXPECT_LT(after[0].tx_bytes - before[0].tx_bytes, kTransferBytes / 10);

  const std::vector<std::string> names = AllNamespaces(*topology);
  EXPECT_THAT(Remaining(names), ::testing::SizeIs(3));
  ENTROGRAD_EXPECT_OK(topology->Remove());
  EXPECT_THAT(Remaining(names), IsEmpty());
  ENTROGRAD_EXPECT_OK(topology->Remove());  // idempotent
}

TEST_F(LinkTopologyTest, DestructorRemovesAndUnlimitedHasNoTbf) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(const LinkRate rate,
                                 ParseLinkRate("unlimited"));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<LinkTopology> topology,
                                 LinkTopology::Create(3, rate));
  EXPECT_EQ(topology->address(2), "10.213.0.3");
  EXPECT_THAT(Qdiscs(topology->namespace_name(0), "eth0"),
              Not(HasSubstr("tbf")));
  const std::vector<std::string> names = AllNamespaces(*topology);
  EXPECT_THAT(Remaining(names), ::testing::SizeIs(4));
  topology.reset();
  EXPECT_THAT(Remaining(names), IsEmpty());
}

TEST_F(LinkTopologyTest, RemoveStaleTopologiesRemovesOnlyDeadRuns) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(const std::string ip,
                                 FindSystemTool("ip", "iproute2"));
  // A pid that is certainly dead: a child that exited and was reaped.
  const pid_t dead = ::fork();
  ASSERT_GE(dead, 0);
  if (dead == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);
  // A pid that is certainly alive: a child that waits to be killed.
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<CapturedProcess> live,
                                 CapturedProcess::Start({"/bin/sleep", "60"}));
  const std::string stale = absl::StrCat("eg", dead, "-0-hub");
  const std::string kept = absl::StrCat("eg", live->pid(), "-0-hub");
  // Under ctest -j, another test's Create removes stale namespaces too, and
  // may take this one while `ip netns add` is still making it (the add then
  // fails): try again.
  absl::Status added;
  for (int attempt = 0; attempt < 10; ++attempt) {
    added = AddNetns(ip, stale);
    if (added.ok()) break;
  }
  ENTROGRAD_ASSERT_OK(added);
  ENTROGRAD_ASSERT_OK(AddNetns(ip, kept));

  absl::StatusOr<int> removed = RemoveStaleTopologies();
  ENTROGRAD_EXPECT_OK(removed);
  // A concurrent test's Create may have removed it first (not counted).
  EXPECT_THAT(Remaining({stale}), IsEmpty());
  EXPECT_THAT(Remaining({kept}), ::testing::SizeIs(1));
  ENTROGRAD_EXPECT_OK(DeleteNetns(ip, kept));
}

TEST_F(LinkTopologyTest, FailedCreateRemovesWhatItMadeAndNamesTheCommand) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(const std::string real_ip,
                                 FindSystemTool("ip", "iproute2"));
  // An `ip` first in PATH that fails host 1's address assignment, after the
  // hub and host 0 exist, and runs the real one otherwise.
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "/fake_ip_", ::getpid());
  ASSERT_TRUE(::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST);
  const std::string fake_ip = dir + "/ip";
  std::ofstream(fake_ip) << "#!/bin/sh\n"
                            "case \"$*\" in *10.213.0.2/24*)\n"
                            "  echo 'injected failure' >&2; exit 2 ;;\n"
                            "esac\n"
                            "exec "
                         << real_ip << " \"$@\"\n";
  ASSERT_EQ(::chmod(fake_ip.c_str(), 0755), 0);
  const char* old_path = std::getenv("PATH");
  const std::string saved_path = old_path != nullptr ? old_path : "";
  ::setenv("PATH", absl::StrCat(dir, ":", saved_path).c_str(), 1);
  absl::StatusOr<std::unique_ptr<LinkTopology>> topology =
      LinkTopology::Create(2, LinkRate{});
  ::setenv("PATH", saved_path.c_str(), 1);
  ::unlink(fake_ip.c_str());
  ::rmdir(dir.c_str());

  EXPECT_THAT(topology, StatusIs(absl::StatusCode::kInternal,
                                 "addr add 10.213.0.2/24 dev eth0` exited "
                                 "with status 2: injected failure"));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(const std::vector<std::string> left,
                                 testing::NamespacesOfPid(::getpid()));
  EXPECT_THAT(left, IsEmpty());
}

}  // namespace
}  // namespace entrograd::link_emulation
