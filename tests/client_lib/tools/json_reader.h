// A minimal JSON reader for the tests: enough to check that the CLI's output
// is one well-formed JSON value and to look at its fields. Strict: rejects
// trailing commas, bare words other than true/false/null, and trailing text.
#ifndef ENTROGRAD_TESTS_CLIENT_LIB_TOOLS_JSON_READER_H_
#define ENTROGRAD_TESTS_CLIENT_LIB_TOOLS_JSON_READER_H_

#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace entrograd::cli::testing {

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0.0;
  std::string text;  // the string, or the number as written
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;  // in order

  const JsonValue* Find(absl::string_view key) const {
    for (const auto& [name, value] : object) {
      if (name == key) return &value;
    }
    return nullptr;
  }
  std::vector<std::string> Keys() const {
    std::vector<std::string> keys;
    for (const auto& entry : object) keys.push_back(entry.first);
    return keys;
  }
};

class JsonReader {
 public:
  // The value `text` holds, or nullopt if it is not exactly one JSON value
  // (surrounding whitespace allowed).
  static std::optional<JsonValue> Parse(absl::string_view text) {
    JsonReader reader(text);
    std::optional<JsonValue> value = reader.Value();
    reader.SkipSpace();
    if (!value.has_value() || reader.position_ != text.size()) {
      return std::nullopt;
    }
    return value;
  }

 private:
  explicit JsonReader(absl::string_view text) : text_(text) {}

  bool AtEnd() const { return position_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[position_]; }
  void SkipSpace() {
    while (!AtEnd() && (Peek() == ' ' || Peek() == '\n' || Peek() == '\t' ||
                        Peek() == '\r')) {
      ++position_;
    }
  }
  bool Consume(absl::string_view word) {
    if (text_.substr(position_, word.size()) != word) return false;
    position_ += word.size();
    return true;
  }

  std::optional<JsonValue> Value() {
    SkipSpace();
    JsonValue value;
    const char c = Peek();
    if (c == '{') return Object();
    if (c == '[') return Array();
    if (c == '"') {
      std::optional<std::string> text = String();
      if (!text.has_value()) return std::nullopt;
      value.kind = JsonValue::Kind::kString;
      value.text = *text;
      return value;
    }
    if (Consume("true")) {
      value.kind = JsonValue::Kind::kBool;
      value.boolean = true;
      return value;
    }
    if (Consume("false")) {
      value.kind = JsonValue::Kind::kBool;
      return value;
    }
    if (Consume("null")) return value;
    return Number();
  }

  std::optional<JsonValue> Number() {
    const size_t start = position_;
    if (Peek() == '-') ++position_;
    if (!std::isdigit(static_cast<unsigned char>(Peek()))) return std::nullopt;
    if (Peek() == '0') {
      ++position_;
    } else {
      while (std::isdigit(static_cast<unsigned char>(Peek()))) ++position_;
    }
    if (Peek() == '.') {
      ++position_;
      if (!std::isdigit(static_cast<unsigned char>(Peek())))
        return std::nullopt;
      while (std::isdigit(static_cast<unsigned char>(Peek()))) ++position_;
    }
    if (Peek() == 'e' || Peek() == 'E') {
      ++position_;
      if (Peek() == '+' || Peek() == '-') ++position_;
      if (!std::isdigit(static_cast<unsigned char>(Peek())))
        return std::nullopt;
      while (std::isdigit(static_cast<unsigned char>(Peek()))) ++position_;
    }
    JsonValue value;
    value.kind = JsonValue::Kind::kNumber;
    value.text = std::string(text_.substr(start, position_ - start));
    value.number = std::strtod(value.text.c_str(), nullptr);
    return value;
  }

  std::optional<std::string> String() {
    if (!Consume("\"")) return std::nullopt;
    std::string out;
    while (!AtEnd() && Peek() != '"') {
      const char c = text_[position_++];
      if (static_cast<unsigned char>(c) < 0x20) return std::nullopt;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (AtEnd()) return std::nullopt;
      const char escaped = text_[position_++];
      switch (escaped) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          if (position_ + 4 > text_.size()) return std::nullopt;
          const std::string hex(text_.substr(position_, 4));
          position_ += 4;
          for (char digit : hex) {
            if (!std::isxdigit(static_cast<unsigned char>(digit))) {
              return std::nullopt;
            }
          }
          // Tests only need to see which code point was escaped.
          out += "<U+" + hex + ">";
          break;
        }
        default:
          return std::nullopt;
      }
    }
    if (!Consume("\"")) return std::nullopt;
    return out;
  }

  std::optional<JsonValue> Array() {
    JsonValue value;
    value.kind = JsonValue::Kind::kArray;
    Consume("[");
    SkipSpace();
    if (Consume("]")) return value;
    while (true) {
      std::optional<JsonValue> element = Value();
      if (!element.has_value()) return std::nullopt;
      value.array.push_back(*std::move(element));
      SkipSpace();
      if (Consume("]")) return value;
      if (!Consume(",")) return std::nullopt;
    }
  }

  std::optional<JsonValue> Object() {
    JsonValue value;
    value.kind = JsonValue::Kind::kObject;
    Consume("{");
    SkipSpace();
    if (Consume("}")) return value;
    while (true) {
      SkipSpace();
      std::optional<std::string> key = String();
      if (!key.has_value()) return std::nullopt;
      SkipSpace();
      if (!Consume(":")) return std::nullopt;
      std::optional<JsonValue> member = Value();
      if (!member.has_value()) return std::nullopt;
      value.object.emplace_back(*key, *std::move(member));
      SkipSpace();
      if (Consume("}")) return value;
      if (!Consume(",")) return std::nullopt;
    }
  }

  absl::string_view text_;
  size_t position_ = 0;
};

}  // namespace entrograd::cli::testing

#endif  // ENTROGRAD_TESTS_CLIENT_LIB_TOOLS_JSON_READER_H_
