// A small leveled logger for entrograd's processes: one line per event on
// stderr, "2026-12-02T17:30:00.123Z I message". Levels below the configured
// one cost a single atomic load.
//
// Thread safety: all functions are thread-safe; lines never interleave.
#ifndef ENTROGRAD_COMMON_LOG_H_
#define ENTROGRAD_COMMON_LOG_H_

#include <atomic>
#include <cstdio>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace entrograd {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

inline std::atomic<int>& LogThreshold() {
  static std::atomic<int> threshold{static_cast<int>(LogLevel::kInfo)};
  return threshold;
}

inline void SetLogLevel(LogLevel level) {
  LogThreshold().store(static_cast<int>(level), std::memory_order_relaxed);
}

inline bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) >=
         LogThreshold().load(std::memory_order_relaxed);
}

// "debug", "info", "warning", "error"; INVALID_ARGUMENT otherwise.
inline absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name) {
  if (name == "debug") return LogLevel::kDebug;
  if (name == "info") return LogLevel::kInfo;
  if (name == "warning") return LogLevel::kWarning;
  if (name == "error") return LogLevel::kError;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown log level \"", name, "\"; expected debug, info, warning or error"));
}

inline void LogLine(LogLevel level, absl::string_view message) {
  if (!LogEnabled(level)) return;
  static constexpr char kLetters[] = {'D', 'I', 'W', 'E'};
  const std::string line = absl::StrCat(
      absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()),
      " ", std::string(1, kLetters[static_cast<int>(level)]), " ", message, "\n");
  // One fwrite per line: stdio locks the stream, so lines stay whole.
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace entrograd

// ENTROGRAD_LOG(kInfo, "joined rank ", rank): the arguments are formatted
// (absl::StrCat) only when the level is enabled.
#define ENTROGRAD_LOG(level, ...)                                          \
  do {                                                                     \
    if (::entrograd::LogEnabled(::entrograd::LogLevel::level)) {           \
      ::entrograd::LogLine(::entrograd::LogLevel::level,                   \
                           ::absl::StrCat(__VA_ARGS__));                   \
    }                                                                      \
  } while (0)

#endif  // ENTROGRAD_COMMON_LOG_H_
