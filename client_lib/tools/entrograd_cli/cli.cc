#include "entrograd_cli/cli.h"

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "entrograd_cli/inspect_command.h"
#include "entrograd_cli/inspect_flags.h"
#include "entrograd_cli/inspect_report.h"

namespace entrograd::cli {
namespace {

constexpr char kUsage[] =
    R"(usage: entrograd-cli <command> [options]

commands:
  inspect   entropy, keep count and encoded size of layer gradients
            (.npy / .f32 files); see entrograd-cli inspect --help

exit status: 0 success, 1 a file could not be read or inspected, 2 bad usage
)";

int RunInspect(absl::Span<const std::string> args, std::ostream& out,
               std::ostream& err) {
  absl::StatusOr<InspectFlags> flags = ParseInspectFlags(args);
  if (!flags.ok()) {
    err << "entrograd-cli inspect: " << flags.status().message() << "\n";
    return kExitUsage;
  }
  if (flags->help) {
    out << kInspectUsage;
    return kExitSuccess;
  }
  // The flags are validated, so whatever fails from here on is a file.
  absl::StatusOr<std::vector<LayerInspection>> layers =
      InspectFiles(flags->files, flags->options);
  if (!layers.ok()) {
    err << "entrograd-cli inspect: " << layers.status().message() << "\n";
    return kExitFileError;
  }
  out << (flags->json ? FormatInspectJson(*layers)
                      : FormatInspectTable(*layers, flags->options));
  out.flush();
  if (!out) {
    err << "entrograd-cli inspect: writing the report failed\n";
    return kExitFileError;
  }
  return kExitSuccess;
}

}  // namespace

int RunCli(absl::Span<const std::string> args, std::ostream& out,
           std::ostream& err) {
  if (args.empty()) {
    err << "entrograd-cli: no command given\n" << kUsage;
    return kExitUsage;
  }
  const std::string& command = args[0];
  if (command == "--help" || command == "-h" || command == "help") {
    out << kUsage;
    return kExitSuccess;
  }
  if (command == "inspect") return RunInspect(args.subspan(1), out, err);
  err << "entrograd-cli: unknown command '" << command << "'\n" << kUsage;
  return kExitUsage;
}

}  // namespace entrograd::cli
