#include "workers/link_emulation/link_emulation_check.h"

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "workers/link_emulation/ip_command.h"
#include "workers/link_emulation/netns_commands.h"
#include "workers/link_emulation/tbf_qdisc.h"
#include "workers/link_emulation/topology_names.h"

namespace entrograd::link_emulation {

namespace {

// Bits of the capabilities in /proc/self/status's CapEff mask
// (linux/capability.h).
constexpr int kCapNetAdmin = 12;
constexpr int kCapSysAdmin = 21;

// The capabilities link emulation needs that this process lacks, by name.
// Where /proc cannot tell, being uid 0 is taken as having them.
std::vector<std::string> MissingCapabilities() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, "CapEff:")) continue;
    uint64_t mask = 0;
    if (!absl::SimpleHexAtoi(absl::StripAsciiWhitespace(rest), &mask)) break;
    std::vector<std::string> missing;
    if ((mask & (uint64_t{1} << kCapNetAdmin)) == 0) {
      missing.push_back("CAP_NET_ADMIN");
    }
    if ((mask & (uint64_t{1} << kCapSysAdmin)) == 0) {
      missing.push_back("CAP_SYS_ADMIN");
    }
    return missing;
  }
  if (::geteuid() == 0) return {};
  return {"CAP_NET_ADMIN", "CAP_SYS_ADMIN"};
}

absl::Status Unavailable(absl::string_view what, const absl::Status& cause) {
  return absl::FailedPreconditionError(absl::StrCat(
      "link emulation unavailable: ", what, ": ", cause.message()));
}

// Tries a veth pair, a bridge and tbf inside the fresh namespace `probe`.
absl::Status ProbeKernelFeatures(const std::string& ip, const std::string& tc,
                                 const std::string& probe) {
  if (absl::Status status = RunCommand({ip, "-n", probe, "link", "add", "pa",
                                        "type", "veth", "peer", "name", "pb"})
                                .status();
      !status.ok()) {
    return Unavailable("veth pairs unsupported (kernel module veth)", status);
  }
  if (absl::Status status =
          RunCommand({ip, "-n", probe, "link", "add", "pbr", "type", "bridge"})
              .status();
      !status.ok()) {
    return Unavailable("bridges unsupported (kernel module bridge)", status);
  }
  std::vector<std::string> tbf = {tc, "-n", probe};
  for (std::string& arg : TbfQdiscArgs("pa", 1'000'000'000)) {
    tbf.push_back(std::move(arg));
  }
  if (absl::Status status = RunCommand(tbf).status(); !status.ok()) {
    return Unavailable("tbf qdisc unavailable (kernel module sch_tbf)", status);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckLinkEmulationAvailable() {
  if (const std::vector<std::string> missing = MissingCapabilities();
      !missing.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("link emulation unavailable: not root (needs ",
                     absl::StrJoin(missing, " and "),
                     " to create network namespaces, veth "
                     "pairs and qdiscs; running as uid ",
                     ::geteuid(), ")"));
  }
  absl::StatusOr<std::string> ip = FindSystemTool("ip", "iproute2");
  if (!ip.ok()) return Unavailable("no ip tool", ip.status());
  absl::StatusOr<std::string> tc = FindSystemTool("tc", "iproute2");
  if (!tc.ok()) return Unavailable("no tc tool", tc.status());

  const std::string prefix = AcquireTopologyPrefix();
  const std::string probe = ProbeNamespace(prefix);
  absl::Status result;
  if (absl::Status status = AddNetns(*ip, probe); !status.ok()) {
    result = Unavailable("network namespaces unsupported", status);
  } else {
    result = ProbeKernelFeatures(*ip, *tc, probe);
    // Its veth pair and bridge go with it.
    if (absl::StatusOr<bool> deleted = DeleteNetns(*ip, probe); !deleted.ok()) {
      std::cerr << "entrograd link emulation: cannot delete the probe "
                   "namespace: "
                << deleted.status().message() << "\n";
    }
  }
  ReleaseTopologyPrefix(prefix);
  return result;
}

}  // namespace entrograd::link_emulation
