// Names of the network namespaces of emulated topologies:
// "eg<pid>-<seq>-<role>", role "hub", "h<host>" or "probe". The pid is the
// creating process's, so concurrent runs (ctest -j) never collide and a
// later run can tell leftovers of a dead one; <seq> tells apart the
// topologies of one process.
//
// Assumes the processes sharing /run/netns share one pid namespace (true
// on one machine outside containers, and inside one container).
//
// Thread safety: all functions are thread-safe.
#ifndef ENTROGRAD_WORKERS_LINK_EMULATION_TOPOLOGY_NAMES_H_
#define ENTROGRAD_WORKERS_LINK_EMULATION_TOPOLOGY_NAMES_H_

#include <sys/types.h>

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace entrograd::link_emulation {

// A fresh "eg<pid>-<seq>" for this process, marked in use until
// ReleaseTopologyPrefix: RemoveStaleTopologies leaves it alone.
std::string AcquireTopologyPrefix();
void ReleaseTopologyPrefix(const std::string& prefix);

std::string HubNamespace(absl::string_view prefix);
std::string HostNamespace(absl::string_view prefix, int host);
std::string ProbeNamespace(absl::string_view prefix);

struct TopologyNamespace {
  pid_t pid = 0;
  std::string prefix;  // "eg<pid>-<seq>"
};

// The parts of a name made by the functions above; nullopt for any other
// name (which link emulation never touches).
std::optional<TopologyNamespace> ParseTopologyNamespace(absl::string_view name);

// Whether the namespace is a leftover: its process is gone, or it carries
// this process's pid but a prefix this process does not hold (a dead
// process whose pid was reused by this one).
bool IsStaleTopologyNamespace(const TopologyNamespace& parsed);

}  // namespace entrograd::link_emulation

#endif  // ENTROGRAD_WORKERS_LINK_EMULATION_TOPOLOGY_NAMES_H_
