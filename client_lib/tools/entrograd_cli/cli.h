// entrograd-cli's dispatch: subcommand, flags, exit status. Separate from
// main.cc so the whole tool runs in-process in tests.
#ifndef ENTROGRAD_TOOLS_ENTROGRAD_CLI_CLI_H_
#define ENTROGRAD_TOOLS_ENTROGRAD_CLI_CLI_H_

#include <ostream>
#include <string>

#include "absl/types/span.h"

namespace entrograd::cli {

// Exit statuses.
inline constexpr int kExitSuccess = 0;
inline constexpr int kExitFileError = 1;  // a file could not be inspected
inline constexpr int kExitUsage = 2;      // bad command line

// Runs entrograd-cli with `args` (argv without the program name), writing
// results to `out` and messages to `err`. Returns the exit status.
int RunCli(absl::Span<const std::string> args, std::ostream& out,
           std::ostream& err);

}  // namespace entrograd::cli

#endif  // ENTROGRAD_TOOLS_ENTROGRAD_CLI_CLI_H_
