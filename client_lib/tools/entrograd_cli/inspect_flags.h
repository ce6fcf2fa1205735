// Command-line flags of `entrograd-cli inspect`.
//
// A hand parser rather than absl flags: the flags belong to one subcommand,
// are few, and must turn bad input into an error status (exit 2) rather
// than abort the process.
#ifndef ENTROGRAD_TOOLS_ENTROGRAD_CLI_INSPECT_FLAGS_H_
#define ENTROGRAD_TOOLS_ENTROGRAD_CLI_INSPECT_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "entrograd/compression_options.h"

namespace entrograd::cli {

// The help text of `inspect`, printed by --help.
extern const char kInspectUsage[];

struct InspectFlags {
  // The compressor's options as the flags set them. Differs from
  // CompressionOptions' defaults only in dense_below (0: show every file
  // compressed, however small). Under entropy_budget, budget_density = rho.
  CompressionOptions options;
  bool json = false;  // --json: one JSON object instead of a table
  bool help = false;  // --help or -h: print kInspectUsage and do nothing else
  std::vector<std::string> files;  // in command-line order
};

// Parses the arguments that follow `inspect`. Flags take their value as the
// next argument or after '=' (--rho=0.01); "--" ends the flags; everything
// else is a file. With --help anywhere, nothing else is checked.
// Errors (INVALID_ARGUMENT, naming the flag and the value): unknown flag,
// missing or malformed value, unknown policy, a value out of range (see
// ValidateCompressionOptions), no files.
absl::StatusOr<InspectFlags> ParseInspectFlags(
    absl::Span<const std::string> args);

}  // namespace entrograd::cli

#endif  // ENTROGRAD_TOOLS_ENTROGRAD_CLI_INSPECT_FLAGS_H_
