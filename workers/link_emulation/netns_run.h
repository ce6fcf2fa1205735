// The run of entrograd-netns: builds an emulated network of K hosts
// (LinkTopology), runs one copy of a command on each host, like mpirun on
// a real cluster, and removes the network again.
//
// The hosts' stdout and stderr are passed through to ours, a complete line
// at a time, so lines of different hosts never mix mid-line. The first
// host that fails (exits non-zero or is killed) is named with its reason;
// the others then get SIGTERM, and SIGKILL after kill_grace. --timeout and
// SIGINT/SIGTERM stop everything the same way. In every case the topology
// is removed before RunNetns returns; no host process outlives the run
// (each gets PR_SET_PDEATHSIG, see workers/launcher/child_process.h), and
// if entrograd-netns itself is SIGKILLed its namespaces are removed by the
// next run (RemoveStaleTopologies).
#ifndef ENTROGRAD_WORKERS_LINK_EMULATION_NETNS_RUN_H_
#define ENTROGRAD_WORKERS_LINK_EMULATION_NETNS_RUN_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "workers/link_emulation/link_rate.h"

namespace entrograd::link_emulation {

// Exit statuses of entrograd-netns; a signal gives 128 + its number
// (SIGINT 130, SIGTERM 143), as shells report it.
inline constexpr int kExitSuccess = 0;
inline constexpr int kExitFailure = 1;  // a host failed, or set-up failed
inline constexpr int kExitUsage = 2;
inline constexpr int kExitUnavailable = 77;  // automake's "skipped"
inline constexpr int kExitTimeout = 124;     // as timeout(1)

struct NetnsOptions {
  // Hosts, each running one copy of `command`; 1..LinkTopology::kMaxHosts.
  int hosts = 0;
  // Every host link's rate, both directions.
  LinkRate link;
  // Stop everything (exit 124) when a host still runs this long after the
  // start; > 0, InfiniteDuration() for no limit.
  absl::Duration timeout = absl::Seconds(600);
  // Where to write the hosts' traffic while the command ran, as JSON
  // (traffic_json.h); empty: not written.
  std::string counters_out;
  // Stopping: how long hosts have between SIGTERM and SIGKILL.
  absl::Duration kill_grace = absl::Seconds(5);
  // The command and its arguments, with placeholders
  // (host_placeholders.h); argv[0] is looked up in PATH. Not empty.
  std::vector<std::string> command;
};

// Runs `options` (validated) and returns the exit status: kExitSuccess
// when every host exited 0; kExitFailure when one failed or the network
// could not be built; kExitUnavailable when link emulation cannot run here
// (CheckLinkEmulationAvailable's message is printed); kExitTimeout; 128 +
// signal. Messages go to stderr, prefixed "entrograd-netns: ".
//
// Call it from the main thread while no other thread exists: it blocks
// SIGINT, SIGTERM and SIGCHLD to read them from a signalfd, restoring the
// mask on return.
int RunNetns(const NetnsOptions& options);

}  // namespace entrograd::link_emulation

#endif  // ENTROGRAD_WORKERS_LINK_EMULATION_NETNS_RUN_H_
