#include "workers/link_emulation/stale_topologies.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "workers/link_emulation/ip_command.h"
#include "workers/link_emulation/netns_commands.h"
#include "workers/link_emulation/topology_names.h"

namespace entrograd::link_emulation {

absl::StatusOr<int> RemoveStaleTopologies() {
  absl::StatusOr<std::string> ip = FindSystemTool("ip", "iproute2");
  if (!ip.ok()) return ip.status();
  absl::StatusOr<std::vector<std::string>> names = ListNetns(*ip);
  if (!names.ok()) return names.status();
  int removed = 0;
  std::vector<std::string> errors;
  for (const std::string& name : *names) {
    const std::optional<TopologyNamespace> parsed =
        ParseTopologyNamespace(name);
    if (!parsed.has_value() || !IsStaleTopologyNamespace(*parsed)) continue;
    // A concurrent clean-up may have taken it since the listing: not an
    // error, and not counted.
    absl::StatusOr<bool> deleted = DeleteNetns(*ip, name);
    if (!deleted.ok()) {
      errors.emplace_back(deleted.status().message());
    } else if (*deleted) {
      ++removed;
    }
  }
  if (!errors.empty()) {
    return absl::InternalError(absl::StrCat("removing stale topologies: ",
                                            absl::StrJoin(errors, "; ")));
  }
  return removed;
}

}  // namespace entrograd::link_emulation
