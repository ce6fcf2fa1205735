#include "workers/link_emulation/netns_commands.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "workers/link_emulation/ip_command.h"

namespace entrograd::link_emulation {

namespace {

// iproute2's NETNS_RUN_DIR.
constexpr char kNetnsRunDir[] = "/var/run/netns";

bool NetnsExists(const std::string& name) {
  return ::access(absl::StrCat(kNetnsRunDir, "/", name).c_str(), F_OK) == 0;
}

}  // namespace

absl::Status AddNetns(const std::string& ip, const std::string& name) {
  return RunCommand({ip, "netns", "add", name}).status();
}

absl::StatusOr<bool> DeleteNetns(const std::string& ip,
                                 const std::string& name) {
  absl::Status status = RunCommand({ip, "netns", "del", name}).status();
  if (status.ok()) return true;
  if (!NetnsExists(name)) return false;
  return status;
}

absl::StatusOr<std::vector<std::string>> ListNetns(const std::string& ip) {
  absl::StatusOr<std::string> listing = RunCommand({ip, "netns", "list"});
  if (!listing.ok()) return listing.status();
  // One namespace a line: "name" or "name (id: 3)".
  std::vector<std::string> names;
  for (absl::string_view line :
       absl::StrSplit(*listing, '\n', absl::SkipWhitespace())) {
    const std::vector<absl::string_view> words =
        absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (!words.empty()) names.emplace_back(words[0]);
  }
  return names;
}

}  // namespace entrograd::link_emulation
