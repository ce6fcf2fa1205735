// The placeholders entrograd-netns fills into each host's copy of the
// command, so one command line serves every host (as with mpirun):
// {host} -> i, {hosts} -> K, {addr} -> host i's address, {addr0} -> host
// 0's (where a server on host 0 listens).
#ifndef ENTROGRAD_WORKERS_LINK_EMULATION_HOST_PLACEHOLDERS_H_
#define ENTROGRAD_WORKERS_LINK_EMULATION_HOST_PLACEHOLDERS_H_

#include <string>
#include <vector>

namespace entrograd::link_emulation {

struct HostPlaceholders {
  int host = 0;
  int hosts = 1;
  std::string addr;
  std::string addr0;
};

// `args` with every placeholder replaced, anywhere in an argument
// ("--rank={host}", "{addr0}:5000"); other braces are left as they are.
std::vector<std::string> ExpandHostPlaceholders(
    const std::vector<std::string>& args, const HostPlaceholders& values);

}  // namespace entrograd::link_emulation

#endif  // ENTROGRAD_WORKERS_LINK_EMULATION_HOST_PLACEHOLDERS_H_
