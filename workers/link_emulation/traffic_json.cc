#include "workers/link_emulation/traffic_json.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "entrograd/common/json_quote.h"

namespace entrograd::link_emulation {

std::string FormatTrafficJson(const LinkRate& link,
                              const std::vector<HostTraffic>& hosts) {
  std::string json = absl::StrCat(
      "{\"link\":", JsonQuote(link.text),
      ",\"rate_bits_per_second\":", link.bits_per_second, ",\"hosts\":[");
  for (size_t i = 0; i < hosts.size(); ++i) {
    const HostTraffic& host = hosts[i];
    absl::StrAppend(&json, i == 0 ? "\n" : ",\n", "{\"host\":", host.host,
                    ",\"namespace\":", JsonQuote(host.namespace_name),
                    ",\"address\":", JsonQuote(host.address),
                    ",\"rx_bytes\":", host.rx_bytes,
                    ",\"tx_bytes\":", host.tx_bytes, "}");
  }
  absl::StrAppend(&json, "]}\n");
  return json;
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
