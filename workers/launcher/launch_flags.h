// Command-line flags of entrograd-launch (absl flags), turned into
// LaunchOptions. Linked into the binary only: the flags are process-global.
#ifndef ENTROGRAD_WORKERS_LAUNCHER_LAUNCH_FLAGS_H_
#define ENTROGRAD_WORKERS_LAUNCHER_LAUNCH_FLAGS_H_

#include "absl/status/statusor.h"
#include "workers/launcher/launch_options.h"

namespace entrograd::launcher {

// Parses argv (exits with usage on --help or an unknown flag, as absl flags
// do), validates, and resolves the binaries. Errors: INVALID_ARGUMENT or
// NOT_FOUND naming the flag; positional arguments are INVALID_ARGUMENT.
absl::StatusOr<LaunchOptions> LaunchOptionsFromFlags(int argc, char** argv);

}  // namespace entrograd::launcher

#endif  // ENTROGRAD_WORKERS_LAUNCHER_LAUNCH_FLAGS_H_
