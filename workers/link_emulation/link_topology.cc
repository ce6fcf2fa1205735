#include "workers/link_emulation/link_topology.h"

#include <iostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "workers/link_emulation/ip_command.h"
#include "workers/link_emulation/net_dev_counters.h"
#include "workers/link_emulation/netns_commands.h"
#include "workers/link_emulation/stale_topologies.h"
#include "workers/link_emulation/tbf_qdisc.h"
#include "workers/link_emulation/topology_names.h"

namespace entrograd::link_emulation {

namespace {

constexpr char kSubnetPrefix[] = "10.213.0.";
constexpr int kPrefixLength = 24;
constexpr char kBridge[] = "br0";
constexpr char kHostInterface[] = "eth0";

// The hub end of host's veth pair.
std::string HubPort(int host) { return absl::StrCat("h", host); }

std::vector<std::string> Concat(std::vector<std::string> head,
                                const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

}  // namespace

absl::StatusOr<std::unique_ptr<LinkTopology>> LinkTopology::Create(
    int hosts, const LinkRate& rate) {
  if (hosts < 1 || hosts > kMaxHosts) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a topology needs 1 to ", kMaxHosts, " hosts, not ", hosts));
  }
  absl::StatusOr<std::string> ip = FindSystemTool("ip", "iproute2");
  if (!ip.ok()) return ip.status();
  absl::StatusOr<std::string> tc = FindSystemTool("tc", "iproute2");
  if (!tc.ok()) return tc.status();
  // Leftovers of dead runs only cost memory; a failure to remove them must
  // not stop this run.
  if (absl::StatusOr<int> removed = RemoveStaleTopologies(); !removed.ok()) {
    std::cerr << "entrograd link emulation: warning: "
              << removed.status().message() << "\n";
  }
  std::unique_ptr<LinkTopology> topology(
      new LinkTopology(AcquireTopologyPrefix(), rate, *ip, *tc));
  if (absl::Status status = topology->Build(hosts); !status.ok()) {
    if (absl::Status removed = topology->Remove(); !removed.ok()) {
      return absl::Status(status.code(),
                          absl::StrCat(status.message(), " (and cleaning up: ",
                                       removed.message(), ")"));
    }
    return status;
  }
  return topology;
}

LinkTopology::LinkTopology(std::string prefix, LinkRate rate, std::string ip,
                           std::string tc)
    : prefix_(std::move(prefix)),
      rate_(std::move(rate)),
      ip_(std::move(ip)),
      tc_(std::move(tc)),
      hub_namespace_(HubNamespace(prefix_)) {}

LinkTopology::~LinkTopology() {
  if (absl::Status status = Remove(); !status.ok()) {
    std::cerr << "entrograd link emulation: " << status.message() << "\n";
  }
}

absl::Status LinkTopology::Build(int hosts) {
  if (absl::Status status = AddNamespace(hub_namespace_); !status.ok()) {
    return status;
  }
  // A bridge without STP forwards on a port as soon as it is up: no
  // learning delay before the first packet.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"link", "add", kBridge, "type", "bridge"},
        std::vector<std::string>{"link", "set", kBridge, "up"}}) {
    if (absl::Status status = Ip(hub_namespace_, args); !status.ok()) {
      return status;
    }
  }
  for (int host = 0; host < hosts; ++host) {
    if (absl::Status status = BuildHost(host); !status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status LinkTopology::BuildHost(int host) {
  const std::string netns = HostNamespace(prefix_, host);
  const std::string address = absl::StrCat(kSubnetPrefix, host + 1);
  host_namespaces_.push_back(netns);
  addresses_.push_back(address);
  if (absl::Status status = AddNamespace(netns); !status.ok()) return status;
  const std::string port = HubPort(host);
  // The pair is made in the hub with its host end moved straight into the
  // host's namespace, so no name ever appears in the root namespace.
  const std::vector<std::pair<const std::string*, std::vector<std::string>>>
      steps = {
          {&netns, {"link", "set", "lo", "up"}},
          {&hub_namespace_,
           {"link", "add", port, "type", "veth", "peer", "name", kHostInterface,
            "netns", netns}},
          {&hub_namespace_, {"link", "set", port, "master", kBridge, "up"}},
          {&netns,
           {"addr", "add", absl::StrCat(address, "/", kPrefixLength), "dev",
            kHostInterface}},
          {&netns, {"link", "set", kHostInterface, "up"}},
      };
  for (const auto& [where, args] : steps) {
    if (absl::Status status = Ip(*where, args); !status.ok()) return status;
  }
  if (rate_.unlimited()) return absl::OkStatus();
  // Egress of each end: the host's eth0 limits what it sends, the hub port
  // what it receives.
  if (absl::Status status =
          Tc(netns, TbfQdiscArgs(kHostInterface, rate_.bits_per_second));
      !status.ok()) {
    return status;
  }
  return Tc(hub_namespace_, TbfQdiscArgs(port, rate_.bits_per_second));
}

absl::Status LinkTopology::AddNamespace(const std::string& name) {
  if (absl::Status status = AddNetns(ip_, name); !status.ok()) return status;
  created_.push_back(name);
  return absl::OkStatus();
}

absl::Status LinkTopology::Ip(const std::string& netns,
                              const std::vector<std::string>& args) const {
  return RunCommand(Concat({ip_, "-n", netns}, args)).status();
}

absl::Status LinkTopology::Tc(const std::string& netns,
                              const std::vector<std::string>& args) const {
  return RunCommand(Concat({tc_, "-n", netns}, args)).status();
}

const std::string& LinkTopology::namespace_name(int host) const {
  return host_namespaces_.at(host);
}

const std::string& LinkTopology::address(int host) const {
  return addresses_.at(host);
}

std::vector<std::string> LinkTopology::CommandInHost(
    int host, const std::vector<std::string>& argv) const {
  return Concat({ip_, "netns", "exec", namespace_name(host)}, argv);
}

absl::StatusOr<std::vector<LinkTopology::Counters>> LinkTopology::ReadCounters()
    const {
  std::vector<Counters> counters;
  for (int host = 0; host < hosts(); ++host) {
    // /proc/net/dev shows the namespace of the process reading it.
    absl::StatusOr<std::string> table =
        RunCommand(CommandInHost(host, {"cat", "/proc/net/dev"}));
    if (!table.ok()) return table.status();
    absl::StatusOr<InterfaceBytes> bytes =
        ParseNetDevBytes(*table, kHostInterface);
    if (!bytes.ok()) {
      return absl::InternalError(absl::StrCat("host ", host, " (",
                                              namespace_name(host),
                                              "): ", bytes.status().message()));
    }
    counters.push_back({bytes->rx_bytes, bytes->tx_bytes});
  }
  return counters;
}

absl::Status LinkTopology::Remove() {
  std::vector<std::string> kept;
  std::vector<std::string> errors;
  // Hosts first, the hub last: the reverse of creation.
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
    if (absl::StatusOr<bool> deleted = DeleteNetns(ip_, *it); !deleted.ok()) {
      kept.insert(kept.begin(), *it);
      errors.emplace_back(deleted.status().message());
    }
  }
  created_ = std::move(kept);
  if (!errors.empty()) {
    return absl::InternalError(absl::StrCat("removing topology ", prefix_, ": ",
                                            absl::StrJoin(errors, "; ")));
  }
  if (prefix_held_) {
    ReleaseTopologyPrefix(prefix_);
    prefix_held_ = false;
  }
  return absl::OkStatus();
}

}  // namespace entrograd::link_emulation
