// Reads one field of a worker's JSON event line ({"event":"done",...}) in
// tests that only need a value or two, without a JSON parser.
#ifndef ENTROGRAD_TESTS_SUPPORT_EVENT_FIELD_H_
#define ENTROGRAD_TESTS_SUPPORT_EVENT_FIELD_H_

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace entrograd::testing {

// The value of "key":"..." (without the quotes) or "key":number in `line`;
// "" when the key is absent. Escapes inside strings are not decoded.
inline std::string EventField(absl::string_view line, absl::string_view key) {
  const std::string needle = absl::StrCat("\"", key, "\":");
  size_t at = line.find(needle);
  if (at == absl::string_view::npos) return "";
  at += needle.size();
  if (at < line.size() && line[at] == '"') {
    const size_t end = line.find('"', at + 1);
    return std::string(line.substr(at + 1, end - at - 1));
  }
  const size_t end = line.find_first_of(",}", at);
  return std::string(line.substr(at, end - at));
}

// A field of the first "done" event in a worker's stdout `output` ("" when
// the worker did not finish).
inline std::string DoneField(absl::string_view output, absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    if (absl::StrContains(line, "\"event\":\"done\"")) {
      return EventField(line, key);
    }
  }
  return "";
}

}  // namespace entrograd::testing

#endif  // ENTROGRAD_TESTS_SUPPORT_EVENT_FIELD_H_
