#include "workers/link_emulation/net_dev_counters.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace entrograd::link_emulation {

namespace {

// Columns after "name:": 8 receive (bytes first), then 8 transmit.
constexpr size_t kColumns = 16;
constexpr size_t kRxBytesColumn = 0;
constexpr size_t kTxBytesColumn = 8;

}  // namespace

absl::StatusOr<InterfaceBytes> ParseNetDevBytes(absl::string_view proc_net_dev,
                                                absl::string_view interface) {
  for (absl::string_view line : absl::StrSplit(proc_net_dev, '\n')) {
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    if (absl::StripAsciiWhitespace(line.substr(0, colon)) != interface) {
      continue;
    }
    const std::vector<absl::string_view> columns =
        absl::StrSplit(line.substr(colon + 1), ' ', absl::SkipWhitespace());
    InterfaceBytes bytes;
    if (columns.size() < kColumns ||
        !absl::SimpleAtoi(columns[kRxBytesColumn], &bytes.rx_bytes) ||
        !absl::SimpleAtoi(columns[kTxBytesColumn], &bytes.tx_bytes)) {
      return absl::InvalidArgumentError(
          absl::StrCat("/proc/net/dev: unexpected line for ", interface, ": \"",
                       line, "\""));
    }
    return bytes;
  }
  return absl::NotFoundError(
      absl::StrCat("/proc/net/dev has no interface ", interface));
}

}  // namespace entrograd::link_emulation
