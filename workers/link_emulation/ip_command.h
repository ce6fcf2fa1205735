// Runs the system's network tools (ip, tc) as child processes, with argv
// and no shell, and turns a failure into a status that names the command
// and quotes what it printed on stderr.
//
// Thread safety: the functions are thread-compatible (no shared state), but
// each waits for its child with waitpid on that child's pid only, so it
// coexists with other code that reaps its own children.
#ifndef ENTROGRAD_WORKERS_LINK_EMULATION_IP_COMMAND_H_
#define ENTROGRAD_WORKERS_LINK_EMULATION_IP_COMMAND_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace entrograd::link_emulation {

// How long one ip/tc command may take: they finish in milliseconds; the
// bound only keeps a wedged one from hanging a run.
inline constexpr absl::Duration kIpCommandTimeout = absl::Seconds(30);

// The absolute path of the executable `name`, searched in $PATH and then in
// /usr/sbin, /sbin, /usr/bin and /bin (ip and tc live in sbin, which a
// non-login PATH may lack). NOT_FOUND naming `name` and `package`, the
// Debian package that provides it.
absl::StatusOr<std::string> FindSystemTool(absl::string_view name,
                                           absl::string_view package);

// "ip netns add eg12-0-hub": argv joined for messages (not for a shell).
std::string FormatCommand(const std::vector<std::string>& argv);

// Runs argv[0] (an absolute path) with argv[1..], stdin from /dev/null, and
// returns its stdout once it exits 0. Errors: INTERNAL "`<command>` exited
// with status 2: <stderr>" when it fails or cannot be started;
// DEADLINE_EXCEEDED (the child is killed) after `timeout`.
absl::StatusOr<std::string> RunCommand(
    const std::vector<std::string>& argv,
    absl::Duration timeout = kIpCommandTimeout);

}  // namespace entrograd::link_emulation

#endif  // ENTROGRAD_WORKERS_LINK_EMULATION_IP_COMMAND_H_
