// The tbf (token bucket filter) settings that limit one veth end to a link
// rate. tbf is the one shaper used: it needs only sch_tbf (netem, for delay
// and loss, is often not built). Pure functions: thread-safe.
#ifndef ENTROGRAD_WORKERS_LINK_EMULATION_TBF_QDISC_H_
#define ENTROGRAD_WORKERS_LINK_EMULATION_TBF_QDISC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace entrograd::link_emulation {

// How long a packet may wait in the tbf queue before it is dropped; sets
// the queue length (rate x latency), like a switch buffer. 50 ms keeps TCP
// at the full rate without drops while bounding the queueing delay.
inline constexpr int kTbfLatencyMs = 50;

// The bucket size: what may leave at line speed after the link was idle.
// 4 ms of traffic at `bits_per_second` (100mbit: 50 kB, 1gbit: 500 kB,
// 10gbit: 5 MB), so the kernel's timer granularity never starves the link
// at high rates and a burst is a negligible share of any transfer that
// measures a rate; at least 16 KiB (ten full-size frames), since tbf drops
// a frame larger than the bucket.
int64_t TbfBurstBytes(int64_t bits_per_second);

// tc arguments (after `tc -n <netns>`) that add the root tbf qdisc on
// `device`: {"qdisc", "add", "dev", device, "root", "tbf", "rate", ...}.
// `bits_per_second` > 0.
std::vector<std::string> TbfQdiscArgs(absl::string_view device,
                                      int64_t bits_per_second);

}  // namespace entrograd::link_emulation

#endif  // ENTROGRAD_WORKERS_LINK_EMULATION_TBF_QDISC_H_
