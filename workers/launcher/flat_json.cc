#include "workers/launcher/flat_json.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace entrograd::launcher {

namespace {

// Nested values deeper than this are refused: the recursion is bounded even
// for a hostile line.
constexpr int kMaxNesting = 64;

class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(text) {}

  absl::StatusOr<FlatJsonObject> ParseObject() {
    SkipWhitespace();
    if (!Consume('{')) return Error("expected '{'");
    FlatJsonObject object;
    SkipWhitespace();
    if (!Consume('}')) {
      while (true) {
        SkipWhitespace();
        std::string key;
        if (absl::Status status = ParseString(&key); !status.ok()) {
          return status;
        }
        SkipWhitespace();
        if (!Consume(':')) return Error("expected ':'");
        SkipWhitespace();
        JsonValue value;
        if (absl::Status status = ParseValue(&value, 0); !status.ok()) {
          return status;
        }
        object[key] = std::move(value);
        SkipWhitespace();
        if (Consume(',')) continue;
        if (Consume('}')) break;
        return Error("expected ',' or '}'");
      }
    }
    SkipWhitespace();
    if (pos_ != text_.size()) return Error("text after the object");
    return object;
  }

 private:
  absl::Status Error(absl::string_view what) const {
    if (pos_ >= text_.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("JSON: ", what, " at end of input (truncated line?)"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("JSON: ", what, " at byte ", pos_));
  }

  bool Consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  bool ConsumeWord(absl::string_view word) {
    if (text_.substr(pos_, word.size()) == word) {
      pos_ += word.size();
      return true;
    }
    return false;
  }

  void SkipWhitespace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
            text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  absl::Status ParseValue(JsonValue* value, int depth) {
    if (pos_ >= text_.size()) return Error("expected a value");
    const char c = text_[pos_];
    if (c == '"') {
      value->type = JsonValue::Type::kString;
      return ParseString(&value->string);
    }
    if (c == '{' || c == '[') {
      value->type = JsonValue::Type::kNested;
      return SkipNested(depth + 1);
    }
    if (ConsumeWord("true") || ConsumeWord("false")) {
      value->type = JsonValue::Type::kBool;
      value->boolean = c == 't';
      return absl::OkStatus();
    }
    if (ConsumeWord("null")) {
      value->type = JsonValue::Type::kNull;
      return absl::OkStatus();
    }
    value->type = JsonValue::Type::kNumber;
    return ParseNumber(&value->number);
  }

  absl::Status ParseNumber(double* number) {
    const size_t start = pos_;
    const bool negative = Consume('-');
    if (ConsumeWord("Infinity")) {
      *number = negative ? -std::numeric_limits<double>::infinity()
                         : std::numeric_limits<double>::infinity();
      return absl::OkStatus();
    }
    if (!negative && ConsumeWord("NaN")) {
      *number = std::numeric_limits<double>::quiet_NaN();
      return absl::OkStatus();
    }
    // JSON's grammar: int [frac] [exp], no leading zeros, no '+'.
    auto digits = [this] {
      const size_t first = pos_;
      while (pos_ < text_.size() && absl::ascii_isdigit(text_[pos_])) ++pos_;
      return pos_ - first;
    };
    const size_t int_start = pos_;
    const size_t int_digits = digits();
    if (int_digits == 0) return Error("expected a value");
    if (int_digits > 1 && text_[int_start] == '0') {
      return Error("leading zero in a number");
    }
    if (Consume('.') && digits() == 0) return Error("expected a digit");
    if (Consume('e') || Consume('E')) {
      if (!Consume('+')) Consume('-');
      if (digits() == 0) return Error("expected a digit");
    }
    if (!absl::SimpleAtod(text_.substr(start, pos_ - start), number)) {
      return Error("bad number");
    }
    return absl::OkStatus();
  }

  absl::Status ParseHex4(uint32_t* code) {
    if (text_.size() - pos_ < 4) return Error("truncated \\u escape");
    *code = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      *code <<= 4;
      if (c >= '0' && c <= '9') {
        *code |= c - '0';
      } else if (c >= 'a' && c <= 'f') {
        *code |= c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        *code |= c - 'A' + 10;
      } else {
        return Error("bad \\u escape");
      }
    }
    return absl::OkStatus();
  }

  static void AppendUtf8(uint32_t code, std::string* out) {
    if (code < 0x80) {
      out->push_back(static_cast<char>(code));
    } else if (code < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (code >> 6)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else if (code < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (code >> 12)));
      out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (code >> 18)));
      out->push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    }
  }

  absl::Status ParseString(std::string* out) {
    if (!Consume('"')) return Error("expected a string");
    out->clear();
    while (pos_ < text_.size()) {
      const char c = text_[pos_++];
      if (c == '"') return absl::OkStatus();
      if (static_cast<unsigned char>(c) < 0x20) {
        return Error("control character in a string");
      }
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) break;
      const char escape = text_[pos_++];
      switch (escape) {
        case '"':
        case '\\':
        case '/':
          out->push_back(escape);
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          uint32_t code = 0;
          if (absl::Status status = ParseHex4(&code); !status.ok()) {
            return status;
          }
          // A surrogate pair spells one code point above U+FFFF; a lone
          // surrogate becomes U+FFFD rather than invalid UTF-8.
          if (code >= 0xD800 && code <= 0xDBFF &&
              text_.substr(pos_, 2) == "\\u") {
            pos_ += 2;
            uint32_t low = 0;
            if (absl::Status status = ParseHex4(&low); !status.ok()) {
              return status;
            }
            if (low >= 0xDC00 && low <= 0xDFFF) {
              code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
            } else {
              AppendUtf8(0xFFFD, out);
              code = low;
            }
          }
          if (code >= 0xD800 && code <= 0xDFFF) code = 0xFFFD;
          AppendUtf8(code, out);
          break;
        }
        default:
          --pos_;
          return Error("bad escape");
      }
    }
    return Error("unterminated string");
  }

  absl::Status SkipNested(int depth) {
    if (depth > kMaxNesting) return Error("nesting too deep");
    const char open = text_[pos_++];
    const char close = open == '{' ? '}' : ']';
    SkipWhitespace();
    if (Consume(close)) return absl::OkStatus();
    while (true) {
      SkipWhitespace();
      if (open == '{') {
        std::string key;
        if (absl::Status status = ParseString(&key); !status.ok()) {
          return status;
        }
        SkipWhitespace();
        if (!Consume(':')) return Error("expected ':'");
        SkipWhitespace();
      }
      JsonValue ignored;
      if (absl::Status status = ParseValue(&ignored, depth); !status.ok()) {
        return status;
      }
      SkipWhitespace();
      if (Consume(',')) continue;
      if (Consume(close)) return absl::OkStatus();
      return Error(open == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
    }
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<FlatJsonObject> ParseFlatJsonObject(absl::string_view text) {
  return Parser(text).ParseObject();
}

std::string JsonNumber(double value) {
  if (!std::isfinite(value)) return "null";
  if (value == std::trunc(value) && std::fabs(value) < 9007199254740992.0) {
    return absl::StrCat(static_cast<int64_t>(value));
  }
  char buffer[32];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    double back = 0;
    if (absl::SimpleAtod(buffer, &back) && back == value) break;
  }
  return buffer;
}

JsonObjectWriter& JsonObjectWriter::Add(absl::string_view key, double value) {
  AddRaw(key, JsonNumber(value));
  return *this;
}

JsonObjectWriter& JsonObjectWriter::Add(absl::string_view key, int64_t value) {
  AddRaw(key, absl::StrCat(value));
  return *this;
}

JsonObjectWriter& JsonObjectWriter::Add(absl::string_view key, bool value) {
  AddRaw(key, value ? "true" : "false");
  return *this;
}

JsonObjectWriter& JsonObjectWriter::Add(absl::string_view key,
                                        absl::string_view value) {
  AddRaw(key, JsonQuote(value));
  return *this;
}

JsonObjectWriter& JsonObjectWriter::AddNull(absl::string_view key) {
  AddRaw(key, "null");
  return *this;
}

JsonObjectWriter& JsonObjectWriter::AddJson(absl::string_view key,
                                            absl::string_view json) {
  AddRaw(key, json);
  return *this;
}

void JsonObjectWriter::AddRaw(absl::string_view key, absl::string_view json) {
  absl::StrAppend(&body_, body_.empty() ? "" : ",\n", "  ", JsonQuote(key),
                  ": ", json);
}

std::string JsonObjectWriter::Finish() const {
  if (body_.empty()) return "{}\n";
  return absl::StrCat("{\n", body_, "\n}\n");
}

}  // namespace entrograd::launcher
