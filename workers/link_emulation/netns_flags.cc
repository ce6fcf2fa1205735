#include "workers/link_emulation/netns_flags.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "workers/link_emulation/link_topology.h"

ABSL_FLAG(int32_t, hosts, 0,
          "hosts (network namespaces), each running one copy of the command");
ABSL_FLAG(std::string, link, "",
          "every host link's rate, both directions: \"unlimited\" or a number "
          "with kbit, mbit or gbit (e.g. 100mbit, 1gbit, 2.5gbit, 10gbit)");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(600),
          "stop every host and exit 124 after this long (\"inf\": no limit)");
ABSL_FLAG(std::string, counters_out, "",
          "write each host's bytes received and sent while the command ran "
          "to this JSON file");

namespace entrograd::link_emulation {

absl::StatusOr<NetnsOptions> NetnsOptionsFromFlags(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "entrograd-netns: runs K copies of a command, copy i on host i of an "
      "emulated network (network namespaces joined by a switch, every link "
      "rate-limited with tbf). In the command, {host} is i, {hosts} is K, "
      "{addr} host i's address and {addr0} host 0's. Needs root.\n"
      "Usage: entrograd-netns --hosts=K --link=RATE [--timeout=600s] "
      "[--counters_out=FILE] -- COMMAND [ARGS...]\n"
      "Exit: 0 all hosts exited 0; 1 a host failed; 2 bad flags; 77 link "
      "emulation unavailable here; 124 timeout; 128+N signal N.");
  const std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  NetnsOptions options;
  options.hosts = absl::GetFlag(FLAGS_hosts);
  if (options.hosts < 1 || options.hosts > LinkTopology::kMaxHosts) {
    return absl::InvalidArgumentError(absl::StrCat("--hosts must be 1 to ",
                                                   LinkTopology::kMaxHosts,
                                                   ", not ", options.hosts));
  }
  const std::string link = absl::GetFlag(FLAGS_link);
  if (link.empty()) {
    return absl::InvalidArgumentError(
        "--link is required (e.g. --link=1gbit, or --link=unlimited)");
  }
  absl::StatusOr<LinkRate> rate = ParseLinkRate(link);
  if (!rate.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--link: ", rate.status().message()));
  }
  options.link = *rate;
  options.timeout = absl::GetFlag(FLAGS_timeout);
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--timeout must be positive, not ",
                     absl::FormatDuration(options.timeout)));
  }
  options.counters_out = absl::GetFlag(FLAGS_counters_out);
  // positional[0] is the program; what follows `--` is the command.
  options.command.assign(positional.begin() + 1, positional.end());
  if (options.command.empty()) {
    return absl::InvalidArgumentError(
        "no command: give it after the flags and `--`, e.g. "
        "entrograd-netns --hosts=2 --link=1gbit -- ./server {addr0}");
  }
  return options;
}

}  // namespace entrograd::link_emulation
