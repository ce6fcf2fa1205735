// Clean-up of topologies whose creator died without removing them (killed
// with SIGKILL, or a crash): their namespaces carry a pid that no longer
// runs (topology_names.h).
#ifndef ENTROGRAD_WORKERS_LINK_EMULATION_STALE_TOPOLOGIES_H_
#define ENTROGRAD_WORKERS_LINK_EMULATION_STALE_TOPOLOGIES_H_

#include "absl/status/statusor.h"

namespace entrograd::link_emulation {

// Deletes every namespace named like a topology's whose process is gone
// (or whose pid is this process's but not a topology this process holds).
// Namespaces named otherwise are never touched. Returns how many it deleted
// (one removed concurrently by another process is not counted). NOT_FOUND
// when `ip` is missing; INTERNAL naming the commands that failed (after
// trying every stale namespace). Thread-safe.
absl::StatusOr<int> RemoveStaleTopologies();

}  // namespace entrograd::link_emulation

#endif  // ENTROGRAD_WORKERS_LINK_EMULATION_STALE_TOPOLOGIES_H_
