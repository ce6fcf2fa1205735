#include "bench/aggregator_load/process_memory.h"

#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace entrograd::bench {

namespace {

// "VmHWM:\t  1234 kB" -> bytes.
bool ParseKilobytes(absl::string_view line, absl::string_view field,
                    int64_t* bytes) {
  if (!absl::ConsumePrefix(&line, field)) return false;
  line = absl::StripAsciiWhitespace(line);
  if (!absl::ConsumeSuffix(&line, "kB")) return false;
  int64_t kilobytes = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &kilobytes)) {
    return false;
  }
  *bytes = kilobytes * 1024;
  return true;
}

}  // namespace

absl::StatusOr<ProcessMemory> ReadProcessMemory(pid_t pid) {
  const std::string path = absl::StrCat("/proc/", pid, "/status");
  std::ifstream file(path);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  ProcessMemory memory;
  bool have_peak = false;
  bool have_rss = false;
  std::string line;
  while (std::getline(file, line)) {
    have_peak = have_peak || ParseKilobytes(line, "VmHWM:", &memory.peak_rss_bytes);
    have_rss = have_rss || ParseKilobytes(line, "VmRSS:", &memory.rss_bytes);
  }
  if (!have_peak || !have_rss) {
    // A zombie has no Vm* lines: the process exited.
    return absl::NotFoundError(
        absl::StrCat(path, " has no VmHWM/VmRSS (process exited?)"));
  }
  return memory;
}

}  // namespace entrograd::bench
