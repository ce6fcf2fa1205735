// Command-line flags of entrograd-netns (absl flags), turned into
// NetnsOptions. Linked into the binary only: the flags are process-global.
#ifndef ENTROGRAD_WORKERS_LINK_EMULATION_NETNS_FLAGS_H_
#define ENTROGRAD_WORKERS_LINK_EMULATION_NETNS_FLAGS_H_

#include "absl/status/statusor.h"
#include "workers/link_emulation/netns_run.h"

namespace entrograd::link_emulation {

// Parses argv: flags, then `--` and the command (exits with usage on --help
// or an unknown flag, as absl flags do). INVALID_ARGUMENT naming the flag
// for a bad value, or when the command is missing.
absl::StatusOr<NetnsOptions> NetnsOptionsFromFlags(int argc, char** argv);

}  // namespace entrograd::link_emulation

#endif  // ENTROGRAD_WORKERS_LINK_EMULATION_NETNS_FLAGS_H_
