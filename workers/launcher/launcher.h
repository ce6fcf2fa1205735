// The launch itself: starts the aggregator on free loopback ports, then W
// workers pointed at it; follows their events (progress, failures); stops
// everything; writes summary.json, summary.md and plot.svg.
//
// Failure is loud and bounded: the first worker that exits non-zero, exits
// without a done event or reports an error event, or an aggregator that
// dies, is named with its reason and the last lines of its log; everything
// left gets SIGTERM, then SIGKILL after options.kill_grace. SIGINT/SIGTERM
// to the launcher do the same. No child outlives the launcher.
#ifndef ENTROGRAD_WORKERS_LAUNCHER_LAUNCHER_H_
#define ENTROGRAD_WORKERS_LAUNCHER_LAUNCHER_H_

#include "absl/status/status.h"
#include "workers/launcher/launch_options.h"
#include "workers/launcher/progress_display.h"

namespace entrograd::launcher {

// Exit statuses of entrograd-launch; a signal gives 128 + its number
// (SIGINT 130, SIGTERM 143), as shells report it.
inline constexpr int kExitSuccess = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

struct LaunchResult {
  // OK: every worker sent done and exited 0, and the results are written.
  // ABORTED: a worker or the aggregator failed (the message says which and
  // why). CANCELLED: stopped by SIGINT or SIGTERM. Others (INTERNAL,
  // NOT_FOUND): the launch could not be set up.
  absl::Status status;
  int exit_code = kExitFailure;
};

// Runs the job `options` describes (validated, binaries resolved: see
// launch_options.h) and returns when every child has exited. Progress and
// messages go to `display`.
//
// Call it from the main thread while no other thread exists: it blocks
// SIGINT, SIGTERM and SIGCHLD to read them from a signalfd, restoring the
// mask on return.
LaunchResult RunLaunch(const LaunchOptions& options, ProgressDisplay& display);

}  // namespace entrograd::launcher

#endif  // ENTROGRAD_WORKERS_LAUNCHER_LAUNCHER_H_
