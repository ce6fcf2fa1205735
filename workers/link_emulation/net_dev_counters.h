// Reads an interface's byte counters out of /proc/net/dev, the per-network-
// namespace table the kernel keeps (one line per interface). A pure
// function: thread-safe.
#ifndef ENTROGRAD_WORKERS_LINK_EMULATION_NET_DEV_COUNTERS_H_
#define ENTROGRAD_WORKERS_LINK_EMULATION_NET_DEV_COUNTERS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace entrograd::link_emulation {

struct InterfaceBytes {
  int64_t rx_bytes = 0;  // received by the interface
  int64_t tx_bytes = 0;  // sent by the interface
};

// The counters of `interface` in `proc_net_dev` (the file's whole text).
// NOT_FOUND when no line names it; INVALID_ARGUMENT when its line does not
// have the 16 numeric columns.
absl::StatusOr<InterfaceBytes> ParseNetDevBytes(absl::string_view proc_net_dev,
                                                absl::string_view interface);

}  // namespace entrograd::link_emulation

#endif  // ENTROGRAD_WORKERS_LINK_EMULATION_NET_DEV_COUNTERS_H_
