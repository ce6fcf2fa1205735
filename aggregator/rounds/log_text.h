// Untrusted text (a job id, a layer name from the wire) made safe for a log
// line or a status message: bounded, printable ASCII only, so a hostile
// worker cannot flood the log or forge lines with control characters.
#ifndef ENTROGRAD_AGGREGATOR_ROUNDS_LOG_TEXT_H_
#define ENTROGRAD_AGGREGATOR_ROUNDS_LOG_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace entrograd::aggregator {

// Longest prefix of untrusted text that LogText keeps, in input bytes.
inline constexpr size_t kLogTextMaxBytes = 64;

// `text` with bytes outside printable ASCII, '"' and '\' written as \xNN,
// cut after `max_bytes` input bytes and then marked with
// "...(N bytes)", N being the full length. Thread-safe (pure).
std::string LogText(absl::string_view text,
                    size_t max_bytes = kLogTextMaxBytes);

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_ROUNDS_LOG_TEXT_H_
