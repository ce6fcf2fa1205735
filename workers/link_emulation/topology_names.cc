#include "workers/link_emulation/topology_names.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <mutex>
#include <set>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace entrograd::link_emulation {

namespace {

constexpr absl::string_view kNamePrefix = "eg";

// Prefixes this process holds; never destroyed, so no static destructor
// races a late ReleaseTopologyPrefix at exit.
struct PrefixRegistry {
  std::mutex mutex;
  int64_t next_seq = 0;
  std::set<std::string> held;
};

PrefixRegistry& Registry() {
  static PrefixRegistry* const registry = new PrefixRegistry();
  return *registry;
}

bool AllDigits(absl::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

bool IsRole(absl::string_view role) {
  if (role == "hub" || role == "probe") return true;
  return absl::ConsumePrefix(&role, "h") && AllDigits(role);
}

bool ProcessExists(pid_t pid) {
  // EPERM: it exists but belongs to someone we may not signal.
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

}  // namespace

std::string AcquireTopologyPrefix() {
  PrefixRegistry& registry = Registry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  std::string prefix =
      absl::StrCat(kNamePrefix, ::getpid(), "-", registry.next_seq++);
  registry.held.insert(prefix);
  return prefix;
}

void ReleaseTopologyPrefix(const std::string& prefix) {
  PrefixRegistry& registry = Registry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  registry.held.erase(prefix);
}

std::string HubNamespace(absl::string_view prefix) {
  return absl::StrCat(prefix, "-hub");
}

std::string HostNamespace(absl::string_view prefix, int host) {
  return absl::StrCat(prefix, "-h", host);
}

std::string ProbeNamespace(absl::string_view prefix) {
  return absl::StrCat(prefix, "-probe");
}

std::optional<TopologyNamespace> ParseTopologyNamespace(
    absl::string_view name) {
  absl::string_view rest = name;
  if (!absl::ConsumePrefix(&rest, kNamePrefix)) return std::nullopt;
  const std::vector<absl::string_view> parts = absl::StrSplit(rest, '-');
  if (parts.size() != 3 || !AllDigits(parts[0]) || !AllDigits(parts[1]) ||
      !IsRole(parts[2])) {
    return std::nullopt;
  }
  int64_t pid = 0;
  if (!absl::SimpleAtoi(parts[0], &pid) || pid <= 0 || pid > INT32_MAX) {
    return std::nullopt;
  }
  TopologyNamespace parsed;
  parsed.pid = static_cast<pid_t>(pid);
  parsed.prefix = absl::StrCat(kNamePrefix, parts[0], "-", parts[1]);
  return parsed;
}

bool IsStaleTopologyNamespace(const TopologyNamespace& parsed) {
  if (parsed.pid != ::getpid()) return !ProcessExists(parsed.pid);
  PrefixRegistry& registry = Registry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  return registry.held.count(parsed.prefix) == 0;
}

}  // namespace entrograd::link_emulation
