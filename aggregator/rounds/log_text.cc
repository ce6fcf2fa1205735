#include "aggregator/rounds/log_text.h"

#include "absl/strings/str_cat.h"

namespace entrograd::aggregator {

std::string LogText(absl::string_view text, size_t max_bytes) {
  const absl::string_view kept = text.substr(0, max_bytes);
  std::string out;
  out.reserve(kept.size() + 16);
  for (const char c : kept) {
    const auto byte = static_cast<unsigned char>(c);
    // Quote and backslash too: the text usually sits inside "..." and the
    // escapes must stay unambiguous.
    if (byte < 0x20 || byte > 0x7e || c == '"' || c == '\\') {
      absl::StrAppend(&out, "\\x", absl::Hex(byte, absl::kZeroPad2));
    } else {
      out.push_back(c);
    }
  }
  if (kept.size() < text.size()) {
    absl::StrAppend(&out, "...(", text.size(), " bytes)");
  }
  return out;
}

}  // namespace entrograd::aggregator
