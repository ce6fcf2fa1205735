// entrograd-netns: flags -> options -> K copies of a command on an
// emulated network; see netns_run.h for the exit statuses.
#include <signal.h>

#include <iostream>

#include "workers/link_emulation/netns_flags.h"
#include "workers/link_emulation/netns_run.h"

int main(int argc, char** argv) {
  absl::StatusOr<entrograd::link_emulation::NetnsOptions> options =
      entrograd::link_emulation::NetnsOptionsFromFlags(argc, argv);
  if (!options.ok()) {
    std::cerr << "entrograd-netns: " << options.status().message() << "\n";
    return entrograd::link_emulation::kExitUsage;
  }
  // A closed stdout (`| head`) must not kill us before the hosts are
  // stopped and the network removed; writes just fail.
  ::signal(SIGPIPE, SIG_IGN);
  return entrograd::link_emulation::RunNetns(*options);
}
