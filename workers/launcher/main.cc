// entrograd-launch: flags -> options -> one local run (aggregator + W
// workers); exits 0 when every worker finished, 1 when one failed, 2 on bad
// flags, 130/143 when interrupted.
#include <signal.h>
#include <unistd.h>

#include <iostream>

#include "workers/launcher/launch_flags.h"
#include "workers/launcher/launcher.h"
#include "workers/launcher/progress_display.h"

int main(int argc, char** argv) {
  absl::StatusOr<entrograd::launcher::LaunchOptions> options =
      entrograd::launcher::LaunchOptionsFromFlags(argc, argv);
  if (!options.ok()) {
    std::cerr << "entrograd-launch: " << options.status().message() << "\n";
    return entrograd::launcher::kExitUsage;
  }
  // A closed stdout (`| head`) must not kill the launcher before it stops
  // its children; writes just fail.
  ::signal(SIGPIPE, SIG_IGN);
  entrograd::launcher::ProgressDisplay display(std::cout, std::cerr,
                                               ::isatty(STDOUT_FILENO) == 1);
  const entrograd::launcher::LaunchResult result =
      entrograd::launcher::RunLaunch(*options, display);
  if (!result.status.ok() && !absl::IsAborted(result.status) &&
      !absl::IsCancelled(result.status)) {
    // Set-up errors; failures and interrupts were reported as they happened.
    std::cerr << "entrograd-launch: " << result.status.message() << "\n";
  }
  return result.exit_code;
}
