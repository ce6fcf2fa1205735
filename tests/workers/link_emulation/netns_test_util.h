// Helpers for the tests that build real topologies: run a binary with its
// output captured, list the namespaces that exist.
#ifndef ENTROGRAD_TESTS_WORKERS_LINK_EMULATION_NETNS_TEST_UTIL_H_
#define ENTROGRAD_TESTS_WORKERS_LINK_EMULATION_NETNS_TEST_UTIL_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "support/captured_process.h"

namespace entrograd::link_emulation::testing {

// The binaries under test, from the build.
std::string NetnsPath();
std::string TcpRateHelperPath();

// The network namespaces `ip netns list` shows now.
absl::StatusOr<std::vector<std::string>> NamespacesNow();

// Those of them that process `pid` named ("eg<pid>-..."), e.g. the
// leftovers of an entrograd-netns run.
absl::StatusOr<std::vector<std::string>> NamespacesOfPid(pid_t pid);

using ::entrograd::testing::CapturedProcess;

}  // namespace entrograd::link_emulation::testing

#endif  // ENTROGRAD_TESTS_WORKERS_LINK_EMULATION_NETNS_TEST_UTIL_H_
