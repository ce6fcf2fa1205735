#include "workers/fashion_mnist/worker_events.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace entrograd::workers {

std::string JsonEscape(absl::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += absl::StrFormat("\\u%04x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

EventLine::EventLine(absl::string_view event)
    : text_(absl::StrCat("{\"event\":\"", JsonEscape(event), "\"")) {}

EventLine& EventLine::Add(absl::string_view key, double value) {
  // JSON has no NaN/Inf: they become null.
  absl::StrAppend(
      &text_, ",\"", JsonEscape(key),
      "\":", std::isfinite(value) ? absl::StrFormat("%.9g", value) : "null");
  return *this;
}

EventLine& EventLine::Add(absl::string_view key, int64_t value) {
  absl::StrAppend(&text_, ",\"", JsonEscape(key), "\":", value);
  return *this;
}

EventLine& EventLine::Add(absl::string_view key, absl::string_view value) {
  absl::StrAppend(&text_, ",\"", JsonEscape(key), "\":\"", JsonEscape(value),
                  "\"");
  return *this;
}

std::string EventLine::ToString() const { return text_ + "}"; }

void EventLine::Emit(std::FILE* out) const {
  const std::string line = ToString() + "\n";
  std::fwrite(line.data(), 1, line.size(), out);
  std::fflush(out);
}

}  // namespace entrograd::workers
