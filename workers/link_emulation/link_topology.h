// An emulated network on one machine: K hosts, each a network namespace
// with one interface ("eth0"), all wired to one switch (a bridge in a
// private hub namespace) by veth pairs whose both ends are rate-limited with
// tbf, so each host's link is limited in both directions, as a host's NIC
// and its switch port are. Processes run "on" host i by entering its
// namespace (CommandInHost). Nothing is created in the root namespace:
// the hosts reach each other and nothing else.
//
//   host 0 [eth0 10.213.0.1/24] --veth-- [h0]                 (hub)
//   host 1 [eth0 10.213.0.2/24] --veth-- [h1] -- bridge br0
//   ...
//
// Names embed the creating process's pid (topology_names.h), so concurrent
// runs never collide; a run that dies without removing its topology has it
// removed by the next Create (RemoveStaleTopologies).
//
// Needs root: see CheckLinkEmulationAvailable.
//
// The library's entry header: it also brings the rest of the public API,
// LinkRate and ParseLinkRate (link_rate.h), CheckLinkEmulationAvailable
// (link_emulation_check.h) and RemoveStaleTopologies
// (stale_topologies.h).
//
// Ownership: the object owns the namespaces it created and deletes them in
// Remove() or, at the latest, the destructor. Processes still running in a
// host namespace keep it alive (without its link) until they exit: stop
// them first.
//
// Thread safety: not thread-safe. Const methods may run concurrently with
// each other; Remove() and destruction need exclusive access. Create and
// RemoveStaleTopologies may run concurrently from different threads.
#ifndef ENTROGRAD_WORKERS_LINK_EMULATION_LINK_TOPOLOGY_H_
#define ENTROGRAD_WORKERS_LINK_EMULATION_LINK_TOPOLOGY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "workers/link_emulation/link_emulation_check.h"  // IWYU pragma: export
#include "workers/link_emulation/link_rate.h"             // IWYU pragma: export
#include "workers/link_emulation/stale_topologies.h"      // IWYU pragma: export

namespace entrograd::link_emulation {

class LinkTopology {
 public:
  // Each host's eth0 counters.
  struct Counters {
    int64_t rx_bytes = 0;  // received by the host
    int64_t tx_bytes = 0;  // sent by the host
  };

  // Up to 253 hosts: one /24 (10.213.0.1 .. 10.213.0.253).
  static constexpr int kMaxHosts = 253;

  // Builds `hosts` hosts whose links run at `rate` (unlimited: no tbf).
  // First removes stale topologies of dead runs (a failure there is only
  // logged to stderr). Errors: INVALID_ARGUMENT for hosts outside
  // 1..kMaxHosts; NOT_FOUND when ip or tc is missing; otherwise the
  // failing command's status (INTERNAL "`ip -n eg12-0-h1 ...` exited with
  // status 2: <its stderr>"), after everything created so far was removed.
  // Takes about ten ip/tc runs per host.
  static absl::StatusOr<std::unique_ptr<LinkTopology>> Create(
      int hosts, const LinkRate& rate);

  // Remove(); an error goes to stderr.
  ~LinkTopology();

  LinkTopology(const LinkTopology&) = delete;
  LinkTopology& operator=(const LinkTopology&) = delete;

  int hosts() const { return static_cast<int>(host_namespaces_.size()); }
  const LinkRate& rate() const { return rate_; }

  // For 0 <= host < hosts(): "eg<pid>-<seq>-h<host>".
  const std::string& namespace_name(int host) const;
  // For 0 <= host < hosts(): its eth0 address, "10.213.0.<host + 1>".
  const std::string& address(int host) const;
  // The namespace of the bridge ("eg<pid>-<seq>-hub"); for inspection.
  const std::string& hub_namespace() const { return hub_namespace_; }

  // An argv that runs `argv` inside host's namespace:
  // {"/usr/sbin/ip" (the resolved path), "netns", "exec", <namespace>,
  // argv...}. `ip netns exec` finds argv[0] in PATH and execs it in place
  // (same pid), so signals sent to the returned command's process reach
  // `argv` itself.
  std::vector<std::string> CommandInHost(
      int host, const std::vector<std::string>& argv) const;

  // Every host's eth0 byte counters now, in host order (they count from
  // creation: subtract two readings for a run's traffic). INTERNAL when a
  // namespace cannot be read (after Remove(), for one).
  absl::StatusOr<std::vector<Counters>> ReadCounters() const;

  // Deletes the namespaces (the veths and the bridge go with them).
  // Idempotent: OK when nothing is left. On an error (INTERNAL naming each
  // failed deletion) the namespaces not deleted are kept, and a later call
  // retries them.
  absl::Status Remove();

 private:
  LinkTopology(std::string prefix, LinkRate rate, std::string ip,
               std::string tc);

  absl::Status Build(int hosts);
  absl::Status BuildHost(int host);
  // Creates the namespace and remembers it for Remove().
  absl::Status AddNamespace(const std::string& name);
  // Runs `ip -n <netns> args...` / `tc -n <netns> args...`.
  absl::Status Ip(const std::string& netns,
                  const std::vector<std::string>& args) const;
  absl::Status Tc(const std::string& netns,
                  const std::vector<std::string>& args) const;

  const std::string prefix_;
  const LinkRate rate_;
  const std::string ip_;  // resolved paths of the tools
  const std::string tc_;
  const std::string hub_namespace_;
  std::vector<std::string> host_namespaces_;
  std::vector<std::string> addresses_;
  // Namespaces that exist, in creation order.
  std::vector<std::string> created_;
  bool prefix_held_ = true;
};

}  // namespace entrograd::link_emulation

#endif  // ENTROGRAD_WORKERS_LINK_EMULATION_LINK_TOPOLOGY_H_
