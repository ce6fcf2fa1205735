// `ip netns add|del|list`: named network namespaces, which ip keeps as
// bind mounts under /var/run/netns.
//
// Thread safety: thread-compatible (no shared state in this process); other
// processes may add and delete namespaces concurrently, which DeleteNetns
// tolerates.
#ifndef ENTROGRAD_WORKERS_LINK_EMULATION_NETNS_COMMANDS_H_
#define ENTROGRAD_WORKERS_LINK_EMULATION_NETNS_COMMANDS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace entrograd::link_emulation {

// `ip` is the resolved path of the ip tool (FindSystemTool). Errors are
// RunCommand's: INTERNAL naming the command with its stderr.
absl::Status AddNetns(const std::string& ip, const std::string& name);

// Deletes `name`: true. Also OK when it is already gone (another process
// removed it first): false.
absl::StatusOr<bool> DeleteNetns(const std::string& ip,
                                 const std::string& name);

// The names `ip netns list` shows, in its order.
absl::StatusOr<std::vector<std::string>> ListNetns(const std::string& ip);

}  // namespace entrograd::link_emulation

#endif  // ENTROGRAD_WORKERS_LINK_EMULATION_NETNS_COMMANDS_H_
