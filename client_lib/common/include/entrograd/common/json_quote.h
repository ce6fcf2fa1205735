// JSON string literals: quotes, backslash escapes, control characters as
// \u00XX, valid UTF-8 kept and invalid bytes replaced by U+FFFD, so the
// output is always valid JSON. Shared by every JSON writer in entrograd
// (entrograd-cli, the worker's events, the launcher's summary).
#ifndef ENTROGRAD_COMMON_JSON_QUOTE_H_
#define ENTROGRAD_COMMON_JSON_QUOTE_H_

#include <cstddef>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace entrograd {

namespace json_quote_internal {

// Length of the valid UTF-8 sequence starting at text[i], or 0 if the bytes
// there are not one (overlong forms, surrogates and > U+10FFFF included).
inline size_t Utf8SequenceLength(absl::string_view text, size_t i) {
  const auto byte = [&](size_t j) {
    return static_cast<unsigned char>(text[j]);
  };
  const unsigned char lead = byte(i);
  size_t length;
  unsigned char low = 0x80, high = 0xBF;  // bounds of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (size_t j = 2; j < length; ++j) {
    if (byte(i + j) < 0x80 || byte(i + j) > 0xBF) return 0;
  }
  return length;
}

}  // namespace json_quote_internal

// `text` as a quoted JSON string.
inline std::string JsonQuote(absl::string_view text) {
  using json_quote_internal::Utf8SequenceLength;
  std::string out = "\"";
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const size_t length = Utf8SequenceLength(text, i);
      if (length == 0) {
        out += "\\ufffd";
        ++i;
      } else {
        out.append(text.data() + i, length);
        i += length;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
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
    ++i;
  }
  return out + "\"";
}

}  // namespace entrograd

#endif  // ENTROGRAD_COMMON_JSON_QUOTE_H_
