// Whether this machine can emulate links: a precondition check with a
// message a user can act on, for tests to skip and tools to exit cleanly.
#ifndef ENTROGRAD_WORKERS_LINK_EMULATION_LINK_EMULATION_CHECK_H_
#define ENTROGRAD_WORKERS_LINK_EMULATION_LINK_EMULATION_CHECK_H_

#include "absl/status/status.h"

namespace entrograd::link_emulation {

// OK when LinkTopology::Create can work here. It checks, in this order, and
// returns FAILED_PRECONDITION saying exactly what is missing:
// - root: CAP_NET_ADMIN (links, qdiscs) and CAP_SYS_ADMIN (the bind mounts
//   of `ip netns add`) in the effective set;
// - `ip` and `tc` (package iproute2), in PATH or /usr/sbin, /sbin;
// - network namespaces (`ip netns add` of a probe namespace), veth pairs,
//   bridges and the tbf qdisc (kernel modules veth, bridge, sch_tbf),
//   tried inside that probe namespace, which is deleted again.
// Takes a few ip/tc runs (tens of milliseconds). Thread-safe.
absl::Status CheckLinkEmulationAvailable();

}  // namespace entrograd::link_emulation

#endif  // ENTROGRAD_WORKERS_LINK_EMULATION_LINK_EMULATION_CHECK_H_
