#include "workers/link_emulation/tbf_qdisc.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace entrograd::link_emulation {

namespace {

constexpr int64_t kBurstMilliseconds = 4;
constexpr int64_t kMinBurstBytes = 16 * 1024;

}  // namespace

int64_t TbfBurstBytes(int64_t bits_per_second) {
  const int64_t bytes_per_second = bits_per_second / 8;
  return std::max(kMinBurstBytes, bytes_per_second * kBurstMilliseconds / 1000);
}

std::vector<std::string> TbfQdiscArgs(absl::string_view device,
                                      int64_t bits_per_second) {
  // Bare numbers: tc reads "<n>bit" as bits per second and a size without a
  // unit as bytes.
  return {"qdisc",   "add",
          "dev",     std::string(device),
          "root",    "tbf",
          "rate",    absl::StrCat(bits_per_second, "bit"),
          "burst",   absl::StrCat(TbfBurstBytes(bits_per_second)),
          "latency", absl::StrCat(kTbfLatencyMs, "ms")};
}

}  // namespace entrograd::link_emulation
