#include "workers/link_emulation/netns_test_util.h"

#include <poll.h>
#include <signal.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "workers/link_emulation/ip_command.h"
#include "workers/link_emulation/netns_commands.h"

namespace entrograd::link_emulation::testing {

using launcher::ChildProcess;
using Stream = ChildProcess::Stream;

std::string NetnsPath() { return ENTROGRAD_NETNS_PATH; }
std::string TcpRateHelperPath() { return ENTROGRAD_TCP_RATE_HELPER_PATH; }

absl::StatusOr<std::vector<std::string>> NamespacesNow() {
  absl::StatusOr<std::string> ip = FindSystemTool("ip", "iproute2");
  if (!ip.ok()) return ip.status();
  return ListNetns(*ip);
}

absl::StatusOr<std::vector<std::string>> NamespacesOfPid(pid_t pid) {
  absl::StatusOr<std::vector<std::string>> all = NamespacesNow();
  if (!all.ok()) return all.status();
  const std::string prefix = absl::StrCat("eg", pid, "-");
  std::vector<std::string> matching;
  for (const std::string& name : *all) {
    if (absl::StartsWith(name, prefix)) matching.push_back(name);
  }
  return matching;
}

}  // namespace entrograd::link_emulation::testing
