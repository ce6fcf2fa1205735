#include "workers/link_emulation/host_placeholders.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace entrograd::link_emulation {

std::vector<std::string> ExpandHostPlaceholders(
    const std::vector<std::string>& args, const HostPlaceholders& values) {
  // One pass per argument: a replacement is never scanned again, so an
  // address cannot be mistaken for a placeholder.
  const std::string host = absl::StrCat(values.host);
  const std::string hosts = absl::StrCat(values.hosts);
  std::vector<std::string> expanded;
  expanded.reserve(args.size());
  for (const std::string& arg : args) {
    expanded.push_back(absl::StrReplaceAll(arg, {{"{host}", host},
                                                 {"{hosts}", hosts},
                                                 {"{addr}", values.addr},
                                                 {"{addr0}", values.addr0}}));
  }
  return expanded;
}

}  // namespace entrograd::link_emulation
