#include "workers/link_emulation/traffic_json.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace entrograd::link_emulation {

std::string FormatTrafficJson(const LinkRate& link,
                              const std::vector<HostTraffic>& hosts) {
  // Ordered: the members in the order the header documents.
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  json["link"] = link.text;
  json["rate_bits_per_second"] = link.bits_per_second;
  json["hosts"] = nlohmann::ordered_json::array();
  for (const HostTraffic& host : hosts) {
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    entry["host"] = host.host;
    entry["namespace"] = host.namespace_name;
    entry["address"] = host.address;
    entry["rx_bytes"] = host.rx_bytes;
    entry["tx_bytes"] = host.tx_bytes;
    json["hosts"].push_back(std::move(entry));
  }
  return json.dump(/*indent=*/-1, ' ', /*ensure_ascii=*/false,
                   nlohmann::ordered_json::error_handler_t::replace) +
         "\n";
}

absl::Status WriteTrafficJson(const std::string& path, const LinkRate& link,
                              const std::vector<HostTraffic>& hosts) {
  std::ofstream out(path, std::ios::trunc);
  out << FormatTrafficJson(link, hosts);
  out.close();
  if (!out) {
    return absl::InternalError(absl::StrCat("cannot write --counters_out ",
                                            path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace entrograd::link_emulation
