// The --counters_out file of entrograd-netns: how many bytes each host's
// link carried while the command ran.
//
//   {"link":"1gbit","rate_bits_per_second":1000000000,"hosts":[
//     {"host":0,"namespace":"eg12-0-h0","address":"10.213.0.1",
//      "rx_bytes":N,"tx_bytes":N}, ...]}
//
// on one line, members in this order (written with nlohmann-json; bench/
// ddp_link.sh reads it with Python's json module).
#ifndef ENTROGRAD_WORKERS_LINK_EMULATION_TRAFFIC_JSON_H_
#define ENTROGRAD_WORKERS_LINK_EMULATION_TRAFFIC_JSON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "workers/link_emulation/link_rate.h"

namespace entrograd::link_emulation {

struct HostTraffic {
  int host = 0;
  std::string namespace_name;
  std::string address;
  int64_t rx_bytes = 0;  // received by the host during the run
  int64_t tx_bytes = 0;  // sent by the host during the run
};

// The JSON text above, ending in a newline.
std::string FormatTrafficJson(const LinkRate& link,
                              const std::vector<HostTraffic>& hosts);

// Writes it to `path` (replaced if it exists). INTERNAL naming the path
// when it cannot be written.
absl::Status WriteTrafficJson(const std::string& path, const LinkRate& link,
                              const std::vector<HostTraffic>& hosts);

}  // namespace entrograd::link_emulation

#endif  // ENTROGRAD_WORKERS_LINK_EMULATION_TRAFFIC_JSON_H_
